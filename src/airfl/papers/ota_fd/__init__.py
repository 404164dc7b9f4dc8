"""DP over-the-air federated distillation (Hu, Yan, Zhang, arXiv:2508.06557; only its appendix
was available). One job each:

* :mod:`.transceiver` - per-class soft-label sharing over the air: Prop. 1 (both cases,
  `an_mode`), Lemma 1's sensitivity (`paper` / `per_class`), Theorem 2's DP constraint, the
  signal-level and nu-level receivers, the realised eps.
* :mod:`.rounds` - Prop. 2 as we read (P3.1)-(P3.2) (exact piecewise objective, max(T_0, a/b), T_0 at a
  quantile of the fading).
* :mod:`.schemes` - the methods as one scheme kind ``ota_fd`` (proposed, without DP, noiseless,
  local only, uniform weights, digital FD with local DP, OTA-FL with DP, noiseless FL; AN via
  ``an_mode``); :mod:`.distillation`
  - the FD round loop (own model per WD, CE + gamma * distillation, clipping to S);
  :mod:`.run_blocks` - the run blocks (X2-X7 inherit X1's setting); :mod:`.experiments` - the
  catalogue: X1 (:mod:`.experiments.x1`), X2-X5 and X7 (:mod:`.experiments.x2_x7`), X6
  (:mod:`.experiments.x6`); :mod:`.claims.x1`,
  :mod:`.claims.x2_x7` - their claims; :mod:`.analytic_figures` - X6's closed-form frames and claims;
  :mod:`.resnet` - the appendix's ResNet-18 (parameter count).
"""

from airfl.core.wing import Wing

WING = Wing(name="ota_fd", package=__name__, catalogue=f"{__name__}.experiments",
            params=f"{__name__}.params",
            schemes={"ota_fd": f"{__name__}.schemes:OtaFdScheme"},
            audits={"otafd": f"{__name__}.audit:ota_fd"})
