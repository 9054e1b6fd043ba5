"""disc21spark: exact DISC21 / ISC2021 image copy detection evaluation on Spark."""

__version__ = "0.1.0"
