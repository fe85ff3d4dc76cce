"""papertrack: tell which conference track a machine-learning paper belongs to, from its abstract."""

__version__ = "0.1.0"
