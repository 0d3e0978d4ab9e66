"""Every picture the README shows exists in docs/images."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_pictures_exist():
    pictures = re.findall(r"!\[[^\]]*\]\((docs/images/[^)]+)\)", (ROOT / "README.md").read_text())
    assert len(pictures) >= 10
    for picture in pictures:
        assert (ROOT / picture).is_file() and "<svg" in (ROOT / picture).read_text()[:2000], picture
