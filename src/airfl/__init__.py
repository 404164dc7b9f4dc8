"""airfl: reproducible private over-the-air and digital wireless federated learning."""

__version__ = "0.1.0"
