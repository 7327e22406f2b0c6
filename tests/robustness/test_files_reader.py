"""`read_untrusted` and `BoundedYamlLoader` on their own: real FIFOs, devices, sockets,
directories, files over the cap, a file that is larger than its size says; YAML nested
or aliased beyond the limits."""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

import pytest
import yaml

from efmoam.linux.files import (
    YAML_ALIAS_NODES_LIMIT,
    YAML_DEPTH_LIMIT,
    BoundedYamlLoader,
    FileRefusedError,
    YamlLimitError,
    read_untrusted,
)
from tests.robustness.files_support import PROMPT, alias_bomb, deep_block_yaml, deep_flow_yaml, make, run_in_thread

LIMIT = 1000


def refusal(path: Path, limit: int = LIMIT) -> FileRefusedError:
    with pytest.raises(FileRefusedError) as refused:
        run_in_thread(lambda: read_untrusted(path, limit, "a test file"))
    return refused.value


def test_a_regular_file_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * LIMIT)
    assert read_untrusted(path, LIMIT) == b"x" * LIMIT
    path.write_bytes(b"")
    assert read_untrusted(path, LIMIT) == b""


def test_a_symbolic_link_to_a_regular_file_is_followed(tmp_path: Path) -> None:
    (tmp_path / "real").write_bytes(b"content")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert read_untrusted(tmp_path / "link", LIMIT) == b"content"


@pytest.mark.parametrize(
    ("kind", "code", "reason"),
    [
        ("fifo", errno.EINVAL, "Not a regular file (a FIFO)"),
        ("dev_zero", errno.EINVAL, "Not a regular file (a character device)"),
        ("directory", errno.EISDIR, "Is a directory"),
        ("socket", errno.EINVAL, "Not a regular file (a socket)"),
    ],
)
def test_what_is_not_a_regular_file_is_refused_at_once(tmp_path: Path, kind: str, code: int, reason: str) -> None:
    path = make(kind, tmp_path / kind)
    started = time.monotonic()
    refused = refusal(path)
    assert time.monotonic() - started < PROMPT
    assert isinstance(refused, OSError)  # existing `except OSError` handling applies
    assert (refused.errno, refused.strerror, refused.filename) == (code, reason, str(path))
    assert str(refused) == f"{path}: {reason}"  # one line, naming the path


def test_a_fifo_with_a_writer_is_refused_too(tmp_path: Path) -> None:
    path = make("fifo", tmp_path / "fifo")
    reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # so that the writer can open
    writer = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    try:
        os.write(writer, b"ports: []\n")
        assert refusal(path).strerror == "Not a regular file (a FIFO)"
    finally:
        os.close(writer)
        os.close(reader)


def test_a_file_over_the_limit_is_refused_by_its_size(tmp_path: Path) -> None:
    path = tmp_path / "big"
    with open(path, "wb") as stream:
        stream.truncate(10 * 1024**3)  # sparse: 10 GiB that are never read
    started = time.monotonic()
    refused = refusal(path, 1 << 20)
    assert time.monotonic() - started < PROMPT
    assert refused.errno == errno.EFBIG
    assert str(refused) == (f"{path}: File too large (10737418240 bytes; a test file may have at most 1 MiB)")
    path.write_bytes(b"x" * (LIMIT + 1))
    assert refusal(path).strerror == f"File too large ({LIMIT + 1} bytes; a test file may have at most {LIMIT} bytes)"


def test_a_file_larger_than_its_size_is_read_to_the_limit_plus_one(tmp_path: Path) -> None:
    # procfs files are regular files of size 0: the reader must not trust st_size
    status = Path("/proc/self/status")
    assert status.stat().st_size == 0
    assert b"Name:" in read_untrusted(status, 1 << 20)
    refused = refusal(status, 16)
    assert refused.strerror == "File too large (it grew while it was read; a test file may have at most 16 bytes)"


def test_a_missing_file_is_the_usual_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_untrusted(tmp_path / "missing", LIMIT)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError):
        read_untrusted(tmp_path / "dangling", LIMIT)


def test_the_descriptor_is_closed(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * (LIMIT + 1))
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(50):
        with pytest.raises(FileRefusedError):
            read_untrusted(path, LIMIT)
        read_untrusted(path, LIMIT + 1)
    assert len(os.listdir("/proc/self/fd")) == before


# -- YAML ---------------------------------------------------------------------------------


def compose(text: str) -> object:
    return run_in_thread(lambda: yaml.compose(text, Loader=BoundedYamlLoader))


@pytest.mark.parametrize("text", [deep_flow_yaml(600), deep_block_yaml(600), deep_flow_yaml(100_000), "[" * 100_000])
def test_deep_yaml_is_refused_with_its_position(text: str) -> None:
    with pytest.raises(YamlLimitError) as refused:
        compose(text)
    assert str(refused.value).startswith(f"nested too deeply (more than {YAML_DEPTH_LIMIT} levels) (line ")
    assert "\n" not in str(refused.value)


def test_nesting_up_to_the_limit_is_fine() -> None:
    assert yaml.load(deep_flow_yaml(YAML_DEPTH_LIMIT - 1), Loader=BoundedYamlLoader) is not None
    with pytest.raises(YamlLimitError):
        yaml.load(deep_flow_yaml(YAML_DEPTH_LIMIT), Loader=BoundedYamlLoader)


def test_a_billion_laughs_is_refused_at_once() -> None:
    started = time.monotonic()
    with pytest.raises(YamlLimitError, match=r"aliases expand too far"):
        compose(alias_bomb())
    assert time.monotonic() - started < PROMPT


def test_aliases_that_stand_for_much_text_are_refused() -> None:
    text = "x: &x " + "y" * 400_000 + "\nl: [*x, *x, *x]\n"
    with pytest.raises(YamlLimitError, match=r"aliases expand too far"):
        compose(text)


def test_a_recursive_alias_is_refused() -> None:
    for text in ("a: &a [*a]\n", "a: &a {b: *a}\n"):
        with pytest.raises(YamlLimitError, match=r"alias \*a inside its own anchor"):
            compose(text)


def test_ordinary_aliases_still_work() -> None:
    text = "a: &s {enabled: true, sf_threshold: 3}\nb: *s\nc: [*s, *s]\n"
    document = yaml.load(text, Loader=BoundedYamlLoader)
    assert document["b"] == document["c"][1] == {"enabled": True, "sf_threshold": 3}
    # many small aliases, far below the limit
    many = "a: &a [1, 2, 3]\nl: [" + ", ".join(["*a"] * (YAML_ALIAS_NODES_LIMIT // 8)) + "]\n"
    assert len(yaml.load(many, Loader=BoundedYamlLoader)["l"]) == YAML_ALIAS_NODES_LIMIT // 8
    with pytest.raises(yaml.YAMLError, match="found undefined alias"):
        yaml.load("a: *nowhere\n", Loader=BoundedYamlLoader)


def test_the_limit_error_is_a_yaml_error() -> None:
    assert issubclass(YamlLimitError, yaml.YAMLError)
