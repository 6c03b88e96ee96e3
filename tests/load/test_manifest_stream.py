"""-r manifests decoded one document at a time from a stream (documents.iter_manifests): the same documents,
lines and errors as the whole text gives, with the first document available before the file is read."""

import json
import os
import random
import threading
from pathlib import Path

import pytest

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.documents import documents_from_text, iter_manifests, load_manifests
from kubectl_kyrec.model import Source

POD = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p{i}\nspec:\n  containers: [{{name: c, image: nginx}}]\n"
# more than the 64 KiB read first, so that what follows is read as the documents are composed
PADDING = "".join("---\n" + POD.format(i=i) for i in range(1000))


def outcome(load, *args):  # type: ignore[no-untyped-def]
    try:
        return [(d.obj, d.source) for d in load(*args)]
    except InputError as err:
        return str(err)


def test_the_first_document_arrives_before_the_rest_is_written(tmp_path: Path) -> None:
    fifo = tmp_path / "pods.yaml"
    os.mkfifo(fifo)
    first_seen = threading.Event()
    arrived_early: list[bool] = []

    def writer() -> None:
        with open(fifo, "w") as out:
            out.write(POD.format(i=0) + "---\n")
            out.flush()
            arrived_early.append(first_seen.wait(10))
            out.write(POD.format(i=1))

    thread = threading.Thread(target=writer)
    thread.start()
    names = []
    for doc in iter_manifests(str(fifo)):
        names.append(doc.name)
        first_seen.set()
    thread.join()
    assert names == ["p0", "p1"]
    assert arrived_early == [True]


@pytest.mark.parametrize("text", [
    "# c\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n--- null\n---\n  apiVersion: v1\n"
    "  kind: Secret\n  metadata: {name: b}\n",
    "apiVersion: v1\r\nkind: List\r\nitems:\r\n- apiVersion: v1\r\n  kind: Pod\r\n  metadata: {name: a}\r\n"
    "- {apiVersion: v1, kind: Pod, metadata: {name: b}}\r\n",
    PADDING + "---\napiVersion: v1\nkind: X\nbase: &b {a: 1}\nspec:\n  <<: *b\n  c: *b\n",
])
def test_streamed_documents_and_lines_are_the_texts(tmp_path: Path, text: str) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(text)
    assert outcome(lambda: list(iter_manifests(str(path)))) == outcome(documents_from_text, text, str(path))


def test_bom_utf16_and_json_files_read_as_before(tmp_path: Path) -> None:
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: é}\n"
    (tmp_path / "a-bom.yaml").write_bytes(b"\xef\xbb\xbf" + text.encode())
    (tmp_path / "b-u16.yaml").write_bytes(text.encode("utf-16"))
    (tmp_path / "c.json").write_text(json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                                                 "metadata": {"name": "j"}}))
    docs, passed_over = load_manifests(str(tmp_path))
    assert [(d.name, d.source.line) for d in docs] == [("é", 1), ("é", 1), ("j", 1)]
    assert passed_over == []


def test_bad_utf8_past_the_first_chunk_is_the_same_message(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes((PADDING + "---\n").encode() + b"apiVersion: v1\nkind: ConfigMap\ndata:\n  name: caf\xe9\n")
    line = PADDING.count("\n") + 5
    got = []
    with pytest.raises(InputError) as info:
        for doc in iter_manifests(str(path)):
            got.append(doc.name)
    assert str(info.value) == f"{path}:{line}: not valid UTF-8: byte 0xe9 at column 12"
    assert len(got) == 1000  # the documents before it were handed on, each once


def test_a_control_character_past_the_first_chunk_is_the_same_message(tmp_path: Path) -> None:
    text = PADDING + "---\napiVersion: v1\nkind: X\na: \x01b\n"
    path = tmp_path / "ctl.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as info:
        list(iter_manifests(str(path)))
    assert str(info.value) == f"{path}:{PADDING.count(chr(10)) + 4}: invalid YAML: unacceptable character " \
                              "#x0001: control characters are not allowed"


def test_an_anchor_read_late_still_guards_aliases(tmp_path: Path) -> None:
    # the first chunk holds no `&`: the alias guards must come on when the anchor is read
    path = tmp_path / "self.yaml"
    path.write_text(PADDING + "---\napiVersion: v1\nkind: X\na: &a [1, *a]\n")
    with pytest.raises(InputError) as info:
        list(iter_manifests(str(path)))
    assert str(info.value) == f"{path}:{PADDING.count(chr(10)) + 4}: anchor value contains an alias to itself"


def test_kyrec_output_in_a_directory_is_passed_over_and_named_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(POD.format(i=0) + "---\napiVersion: kyrec/v1\nkind: EvalResult\n"
                                     "---\n" + POD.format(i=1))
    docs, passed_over = load_manifests(str(tmp_path))
    assert [d.name for d in docs] == ["p0", "p1"]
    assert passed_over == [f"{tmp_path / 'a.yaml'} (kyrec/v1 EvalResult)"]
    with pytest.raises(InputError) as info:
        load_manifests(str(tmp_path / "a.yaml"))
    assert info.value.source == Source(str(tmp_path / "a.yaml"), 8)


def test_mangled_files_give_what_their_text_gives(tmp_path: Path) -> None:
    # Seeded mutations of valid YAML, long enough to be read in several chunks: streamed, every one gives the
    # documents and the error (text and line) that the whole text gives.
    base = (PADDING + "---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n"
            "  metadata: &m {name: a, labels: {on: yes}}\n- apiVersion: v1\n  kind: Pod\n  metadata: *m\n"
            "  spec:\n    <<: *m\n    x: [1, 2.0, 0x1F, !!int '3', !!binary aGk=, !!float 1]\n")
    tail = len(PADDING)  # mutate the part read late
    pieces = [*"{}[]:,-&*!|>'\"#%@`?\n\t ~.0189eE+yN<\\\x00\x85", "---\n", "!!int ", "<<: ", "&a ", "*a"]
    rng = random.Random(4321)
    raised = 0
    path = tmp_path / "m.yaml"
    for _ in range(60):
        text = list(base)
        for _ in range(rng.randint(1, 4)):
            pos = rng.randrange(tail, len(text))
            text[pos:pos + rng.randint(0, 1)] = [rng.choice(pieces)]
        joined = "".join(text)
        path.write_bytes(joined.encode("utf-8", "surrogatepass"))
        expected = outcome(documents_from_text, joined, str(path))
        assert outcome(lambda: list(iter_manifests(str(path)))) == expected
        raised += isinstance(expected, str)
    assert raised > 20  # the mutations did break most inputs, so the error paths were exercised


def test_scalars_resolved_once_per_stream_keep_their_style() -> None:
    # the same texts, plain, quoted, tagged and as keys, across documents: each keeps its own meaning
    text = ("apiVersion: v1\nkind: X\nmetadata: {name: a}\ndata: {on: on, 'on': 'on', x: !!str on, m: 0x1F}\n"
            "---\napiVersion: v1\nkind: X\nmetadata: {name: b}\ndata: {on: on, 'on': 'on', x: !!str on, m: 0x1F,"
            " q: '0x1F', z: 1.0, w: .inf}\n")
    with pytest.raises(InputError) as info:
        documents_from_text(text, "s.yaml")
    assert str(info.value) == "s.yaml:9: `.inf` is not a JSON number (NaN and infinities are not)"
    first, second = (d.obj["data"] for d in documents_from_text(text.replace(", w: .inf", ""), "s.yaml"))
    assert first == {"true": True, "on": "on", "x": "on", "m": 31}
    assert second == {"true": True, "on": "on", "x": "on", "m": 31, "q": "0x1F", "z": 1}
    assert type(second["z"]) is int


def test_documents_of_one_stream_share_their_keys_and_short_values(tmp_path: Path) -> None:
    path = tmp_path / "pods.yaml"
    path.write_text(PADDING)
    docs = list(iter_manifests(str(path)))
    first, last = docs[0].obj, docs[-1].obj
    assert [k for k in first["spec"]["containers"][0]] == ["name", "image"]
    assert next(iter(first["spec"])) is next(iter(last["spec"]))         # "containers", once
    assert first["spec"]["containers"][0]["image"] is last["spec"]["containers"][0]["image"]  # "nginx"


def test_with_the_collector_paused_a_dropped_document_leaves_nothing_behind(tmp_path: Path) -> None:
    # the command runs with the cyclic collector off (cli/common.py): anything of a document caught in a
    # reference cycle would stay in memory for the whole run, so a streamed file would grow like a list
    import gc
    import weakref

    from kubectl_kyrec.load.yaml_nodes import iter_yaml_documents

    path = tmp_path / "pods.yaml"
    path.write_text(PADDING)
    left: list[weakref.ref] = []
    enabled = gc.isenabled()
    gc.disable()
    try:
        with path.open("rb") as stream:
            for doc in iter_yaml_documents(stream, str(path)):
                left.append(weakref.ref(doc.node))
        with_anchor = "apiVersion: v1\nkind: X\nbase: &b {a: 1}\nspec: *b\n---\n" + PADDING
        for doc in iter_yaml_documents(with_anchor, "a.yaml"):
            left.append(weakref.ref(doc.node))
        del doc
        alive = sum(ref() is not None for ref in left)  # before the collector is back, which would free cycles
    finally:
        if enabled:
            gc.enable()
    assert len(left) == 2001 and alive == 0


def test_stdin_documents_arrive_as_they_are_written() -> None:
    # `kustomize build | kubectl kyrec eval -r -`: the first document is handed on before the pipe is closed
    read_fd, write_fd = os.pipe()
    first_seen = threading.Event()
    arrived_early: list[bool] = []

    def writer() -> None:
        with os.fdopen(write_fd, "w") as out:
            out.write(POD.format(i=0) + "---\n")
            out.flush()
            arrived_early.append(first_seen.wait(10))
            out.write(POD.format(i=1))

    thread = threading.Thread(target=writer)
    thread.start()
    with os.fdopen(read_fd, "r") as stdin:
        names = []
        for doc in iter_manifests("-", stdin=stdin):  # type: ignore[arg-type]
            names.append((doc.name, doc.source))
            first_seen.set()
    thread.join()
    assert names == [("p0", Source("<stdin>", 1)), ("p1", Source("<stdin>", 8))]
    assert arrived_early == [True]


@pytest.mark.parametrize(("data", "message"), [
    ((PADDING + "---\n").encode() + b"apiVersion: v1\nkind: X\ndata:\n  name: caf\xe9\n",
     f"<stdin>:{PADDING.count(chr(10)) + 5}: not valid UTF-8: byte 0xe9 at column 12"),
    ((PADDING + "---\napiVersion: v1\nkind: X\na: \x01b\n").encode(),
     f"<stdin>:{PADDING.count(chr(10)) + 4}: invalid YAML: unacceptable character #x0001: control characters "
     "are not allowed"),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: é}\n".encode("utf-16"), None),
    (b'  \n{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j"}}', None),
])
def test_stdin_that_libyaml_cannot_stream_reads_as_before(data: bytes, message: str | None) -> None:
    # a pipe cannot be read twice: what was read is kept for the message of a stream libyaml refuses
    read_fd, write_fd = os.pipe()
    thread = threading.Thread(target=lambda: (os.write(write_fd, data), os.close(write_fd)))
    thread.start()
    with os.fdopen(read_fd, "r") as stdin:
        if message is None:
            docs, _ = load_manifests("-", stdin=stdin)  # type: ignore[arg-type]
            assert [d.kind for d in docs] == ["ConfigMap"]
        else:
            with pytest.raises(InputError) as info:
                load_manifests("-", stdin=stdin)  # type: ignore[arg-type]
            assert str(info.value) == message
    thread.join()
