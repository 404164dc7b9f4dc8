"""The simulator core: batched local training, the Scheme interface, the round loop, evaluation."""
