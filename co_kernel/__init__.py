"""Co: a notebook-native AI assistant shipped as a Jupyter kernel."""

__version__ = "0.1.0"
__all__ = ["__version__"]
