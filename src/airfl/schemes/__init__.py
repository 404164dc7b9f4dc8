"""Generic schemes shared by the papers' figures (baselines any wing may compare against).

Importing this package registers them with `airfl.core.scheme.SCHEME_TYPES`.
"""

from airfl.schemes import digital, dp, ideal, ota  # noqa: F401  (registration)
