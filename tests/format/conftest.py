"""Make the manifest helpers (and tests/kind_list.py) importable by the format tests."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent))  # tests/kind_list.py
