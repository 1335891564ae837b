import sys
from pathlib import Path

# The tests run against the package in this directory, installed or not.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
