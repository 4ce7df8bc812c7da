"""The learner, the training loop and checkpoints."""
