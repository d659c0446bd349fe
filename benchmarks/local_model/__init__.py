"""The local model's installer (``python -m benchmarks.local_model.install``, run by ``make local-model``)."""
