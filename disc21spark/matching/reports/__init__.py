"""Results as files and tables for people: metrics.json, the curve's CSV and PNG, the terminal table."""
