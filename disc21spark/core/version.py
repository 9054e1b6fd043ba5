"""The package's version, below every module that names it (run.json, --version): they
import it from here, not from the package, whose lazy API imports nearly every module."""

__version__ = "0.1.0"
