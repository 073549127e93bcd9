"""Work started from the app reads files only inside the lab's folders (issue: a page could read
any server file); the CLI, run by the machine's owner, keeps full paths."""

import os
from dataclasses import dataclass

import pytest

from core import paths
from core.readers.data import read_texts
from core.errors import UserError
from core.jobs import get_runner, submit
from core.specs import AttackSpec, check_params, param

REFUSED = "the app reads files only from its own folder"


@pytest.fixture
def outside(tmp_path):
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("root:x:0:0\n")
    return secret


def test_confined_reads_refuse_outside_files_without_telling_if_they_exist(outside):
    assert read_texts(str(outside)) == ["root:x:0:0"]  # the CLI reads any path
    with paths.confined():
        for path in (outside, outside.with_name("missing.txt"), "/etc/passwd"):
            with pytest.raises(UserError, match=REFUSED) as refused:
                read_texts(str(path))
            assert str(outside.parent) not in str(refused.value)  # no server path echoed


def test_confined_reads_allow_the_lab_home_and_the_operators_folders(outside, lab_home,
                                                                     monkeypatch):
    inside = lab_home / "uploads" / "corpus.txt"
    inside.parent.mkdir(parents=True)
    inside.write_text("a line\n")
    link = lab_home / "uploads" / "link.txt"
    link.symlink_to(outside)
    with paths.confined():
        assert read_texts(str(inside)) == ["a line"]
        with pytest.raises(UserError, match=REFUSED):
            read_texts(str(link))  # a link inside the home that leads outside
        monkeypatch.setenv("LEAKAGE_LAB_DATA", f"/nonexistent{os.pathsep}{outside.parent}")
        assert read_texts(str(outside)) == ["root:x:0:0"]


def test_special_files_and_other_formats_are_refused(tmp_path):
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    with pytest.raises(UserError, match="not a regular file"):
        read_texts(str(fifo))
    with pytest.raises(UserError, match="give a .txt"):
        read_texts("/etc/passwd")


@dataclass(frozen=True)
class ReadConfig:
    path: str = param("", help="a file to read")

    def __post_init__(self):
        check_params(self)


@dataclass
class ReadResult:
    lines: int
    stopped_early: bool = False


READER = AttackSpec(name="reader", title="reader", config_type=ReadConfig,
                    result_type=ReadResult, tiny_config=ReadConfig,
                    run=lambda config, **_: ReadResult(len(read_texts(config.path))))


def test_a_job_a_page_starts_is_confined_and_fails_with_the_message(outside):
    page_run = get_runner().wait(submit(READER, ReadConfig(str(outside)), confined=True), 20)
    assert page_run.status == "failed" and REFUSED in page_run.error
    cli_run = get_runner().wait(submit(READER, ReadConfig(str(outside))), 20)
    assert cli_run.status == "done" and cli_run.result["lines"] == 1


def test_a_model_folder_outside_the_lab_is_refused_when_confined(tiny_lm_dir):
    from core.models import load_model

    with paths.confined(), pytest.raises(UserError, match=REFUSED):
        load_model(str(tiny_lm_dir), device="cpu")


def test_messages_show_paths_relative_to_the_lab_home_when_confined(lab_home):
    missing = lab_home / "uploads" / "gone.txt"
    with pytest.raises(UserError, match=f"no such file: {missing}"):
        read_texts(str(missing))  # the CLI: the full path
    with paths.confined(), pytest.raises(UserError) as refused:
        read_texts(str(missing))
    assert "no such file: uploads/gone.txt" in str(refused.value)
    assert str(lab_home) not in str(refused.value)


def test_a_model_folder_in_the_lab_home_whose_files_link_out_is_refused(tiny_lm_dir, lab_home):
    """A folder is confined like its files: one link out of the app's folders refuses it."""
    import shutil

    from core.models import load_model

    folder = lab_home / "uploads" / "linked"
    shutil.copytree(tiny_lm_dir, folder)
    weights = next(folder.glob("*.safetensors"))
    weights.unlink()
    weights.symlink_to(next(tiny_lm_dir.glob("*.safetensors")))   # outside the lab home
    with paths.confined(), pytest.raises(UserError, match="links outside the app's folders"):
        load_model(str(folder), device="cpu")
    load_model(str(folder), device="cpu")   # the CLI, unconfined, reads it
