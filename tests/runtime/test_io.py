"""airfl.runtime.io: atomic writes leave no partial file and give the file the mode a plain write would
(0o666 less the umask), not the temporary file's private 0o600."""

import os

import pytest

from airfl.runtime.io import atomic_path, write_text


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_an_atomic_write_gets_the_mode_of_a_plain_write(tmp_path, umask):
    old = os.umask(umask)
    try:
        write_text(tmp_path / "out.txt", "x")
        with open(tmp_path / "plain.txt", "w") as plain:
            plain.write("x")
    finally:
        os.umask(old)
    mode = (tmp_path / "out.txt").stat().st_mode & 0o777
    assert mode == (tmp_path / "plain.txt").stat().st_mode & 0o777 == 0o666 & ~umask


def test_a_failed_block_leaves_neither_the_target_nor_a_temporary_file(tmp_path):
    with pytest.raises(RuntimeError):
        with atomic_path(tmp_path / "out.txt") as tmp:
            tmp.write_text("partial")
            raise RuntimeError("the writer failed")
    assert list(tmp_path.iterdir()) == []
