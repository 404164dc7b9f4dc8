"""Models as flat parameter vectors (flat), the papers' torch networks (networks), the CNNs' fused
SGD step (cnn_step), the compiled loops of softmax regression's gradient rows (softmax_rows) and
the training arithmetic (precision)."""
