"""Digital FL: stochastic quantization, fixed-rate transmission with outage, TDMA latency.

Each device quantizes its update with the unbiased r-bit dithered quantizer (Biased FL paper
Sec. II-C, eq. 14) and sends L = 64 + d r bits at a fixed rate R bit/s/Hz in its own TDMA slot. The
slot is lost (outage) when log2(1 + E_s |h|^2 / N0) < R (Shannon). The server averages the
received updates with data-size weights renormalised over the devices it received (a biased
estimator when outage correlates with data, as in non-iid partitions).
"""

from __future__ import annotations


from airfl.channel.digital import outage, outage_probability_rayleigh
from airfl.channel.quantization import payload_bits, stochastic_quantize
from airfl.core.aggregation import masked_weighted_mean
from airfl.core.scheme import DesignContext, RoundState, Scheme


class DigitalQuantized(Scheme):
    kind = "digital_quantized"

    def _snr_edge(self) -> float:
        return 10.0 ** (self.params["snr_db"] / 10.0)

    def design(self, context: DesignContext):
        mean_snr = self._snr_edge() * context.channel.path_gain / context.channel.reference_gain
        bits = payload_bits(context.dim, self.params["bits"])
        return {"payload_bits": int(bits),
                "outage_probability": outage_probability_rayleigh(
                    mean_snr, self.params["rate_bps_hz"]).tolist(),
                "slot_s": float(bits / (context.channel.bandwidth_hz * self.params["rate_bps_hz"]))}

    def aggregate(self, updates, state: RoundState, design):
        snr = self._snr_edge() * state.channel_power / state.statistics.reference_gain
        received = ~outage(snr, self.params["rate_bps_hz"])
        quantized = stochastic_quantize(updates, self.params["bits"], state.streams("quantization"))
        estimate = masked_weighted_mean(quantized, state.data_sizes.to(updates.device),
                                        received.to(updates.device))
        record = {"participants": int(received.sum()),
                  "latency_s": design["slot_s"] * updates.shape[0],     # every device uses its slot
                  "bits": design["payload_bits"] * updates.shape[0], "privacy": None}
        return estimate, record
