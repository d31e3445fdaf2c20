"""Reading attachments: text, PDF and zip trees, and every hostile file the issue names, each refused with a
message its chip can show, memory bounded by the caps."""

from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pypdf import PdfWriter
from tokenizers import Tokenizer, models, pre_tokenizers

from m3ui.documents.attachment import DOCUMENT_BLOCK, message_with
from m3ui.documents.budget import Budget, context_length
from m3ui.documents.limits import Limits
from m3ui.documents.reader import read_upload, read_uploads
from m3ui.documents.token_count import TokenCounter
from m3ui.documents.zip_tree import TreePatterns

COUNTER = TokenCounter()  # no tokenizer.json: estimates


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def text_pdf(text: str) -> bytes:
    """A one-page PDF whose page draws `text` (written by hand: pypdf reads, it does not typeset)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
               b"/Resources << /Font << /F1 5 0 R >> >> >>",
               b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out, offsets = io.BytesIO(b"%PDF-1.4\n"), []
    out.seek(0, 2)
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (number, body))
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    out.write(b"".join(b"%010d 00000 n \n" % o for o in offsets))
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()


def test_text_code_csv_json_and_logs_are_read_and_counted(tmp_path: Path) -> None:
    for name, body in [("a.py", "def f():\n    return 1\n"), ("b.md", "# Title\nhé ünïcode ✓\n"),
                       ("c.csv", "a,b\n1,2\n"), ("d.json", '{"k": [1, 2]}'), ("e.log", "INFO start\tok\r\n")]:
        got = read_upload(write(tmp_path, name, body.encode()), name, COUNTER)
        assert not got.refused, got.error
        assert got.text == body and got.kind == "text" and got.size == len(body.encode())
        assert got.tokens.tokens > 0 and not got.tokens.exact and "estimate" in got.tokens.label()


def test_binary_and_non_utf8_are_refused_whatever_the_name(tmp_path: Path) -> None:
    png = read_upload(write(tmp_path, "notes.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(200)), "notes.txt",
                      COUNTER)
    assert png.refused and "binary" in png.error
    latin = read_upload(write(tmp_path, "l.txt", "café au lait".encode("latin-1")), "l.txt", COUNTER)
    assert latin.refused and "not UTF-8" in latin.error and "0xe9" in latin.error
    utf16 = read_upload(write(tmp_path, "w.txt", "hello".encode("utf-16")), "w.txt", COUNTER)
    assert utf16.refused and "UTF-16" in utf16.error


def test_a_2_gb_file_is_refused_from_its_size_without_reading_it(tmp_path: Path) -> None:
    path = tmp_path / "huge.log"
    with open(path, "wb") as f:  # sparse: 2 GB on paper, nothing on disk
        f.truncate(2 * 1024**3)
    got = read_upload(path, "huge.log", COUNTER)
    assert got.refused and got.size == 2 * 1024**3 and "2.0 GB" in got.error and "cap" in got.error


def test_the_browser_name_is_only_a_label(tmp_path: Path) -> None:
    got = read_upload(write(tmp_path, "x", b"plain"), "../../etc/passwd", COUNTER)
    assert got.name == "passwd" and got.text == "plain"


def test_pdf_text_is_extracted_and_encrypted_pdfs_are_refused(tmp_path: Path) -> None:
    got = read_upload(write(tmp_path, "p.pdf", text_pdf("Hello from a PDF")), "p.pdf", COUNTER)
    assert not got.refused, got.error
    assert got.kind == "pdf" and "Hello from a PDF" in got.text and "[page 1]" in got.text
    writer = PdfWriter(clone_from=io.BytesIO(text_pdf("secret")))
    writer.encrypt("pw", algorithm="RC4-128")
    locked = io.BytesIO()
    writer.write(locked)
    enc = read_upload(write(tmp_path, "e.pdf", locked.getvalue()), "e.pdf", COUNTER)
    assert enc.refused and "encrypted PDF" in enc.error
    broken = read_upload(write(tmp_path, "b.pdf", b"%PDF-1.4\n garbage"), "b.pdf", COUNTER)
    assert broken.refused and "PDF" in broken.error


def zip_of(files: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", method) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return out.getvalue()


def test_a_zip_tree_keeps_text_files_by_pattern_and_lists_what_it_skipped(tmp_path: Path) -> None:
    data = zip_of({"src/main.py": b"print(1)\n", "src/util.py": b"x = 2\n", "README.md": b"# r\n",
                   "node_modules/dep/index.js": b"junk", "img/logo.png": b"\x89PNG\x00\x00",
                   "old.txt": "é".encode("latin-1")})
    path = write(tmp_path, "tree.zip", data)
    got = read_upload(path, "tree.zip", COUNTER)
    assert got.kind == "zip" and "--- src/main.py ---\nprint(1)" in got.text and "README.md" in got.text
    assert "node_modules" not in got.text and "logo.png" not in got.text
    assert "3 files" in got.note and "img/logo.png: not text" in got.note and "old.txt: not UTF-8" in got.note
    only_py = read_upload(path, "tree.zip", COUNTER, patterns=TreePatterns.parse("*.py", "util.py"))
    assert "main.py" in only_py.text and "util.py" not in only_py.text and "README" not in only_py.text


def test_zip_bombs_are_refused_by_declared_size_and_ratio(tmp_path: Path) -> None:
    limits = Limits(max_zip_inflated=4 * 1024 * 1024)
    big = read_upload(write(tmp_path, "b.zip", zip_of({"a.txt": b"a" * (8 * 1024 * 1024)})), "b.zip", COUNTER,
                      limits=limits)
    assert big.refused and "zip bomb" in big.error
    ratio = read_upload(write(tmp_path, "r.zip", zip_of({"z.txt": b"0" * (3 * 1024 * 1024)})), "r.zip", COUNTER,
                        limits=limits)
    assert ratio.refused and "zip bomb" in ratio.error and "x" in ratio.error


def test_a_zip_lying_about_its_sizes_is_stopped_while_inflating(tmp_path: Path) -> None:
    """The directory claims 10 bytes: inflating stops there, and the member fails its CRC check."""
    data = bytearray(zip_of({"lie.txt": b"word " * 200_000}))
    real = 1_000_000
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):  # local header, central directory
        at = data.find(signature)
        assert struct.unpack_from("<I", data, at + offset)[0] == real
        struct.pack_into("<I", data, at + offset, 10)
    got = read_upload(write(tmp_path, "lie.zip", bytes(data)), "lie.zip", COUNTER)
    assert got.refused and "lie.txt: unreadable" in got.error and "CRC" in got.error


def test_too_many_zip_entries_and_bad_zips(tmp_path: Path) -> None:
    limits = Limits(max_zip_members=50)
    many = read_upload(write(tmp_path, "m.zip", zip_of({f"f{i}.txt": b"x" for i in range(60)})), "m.zip", COUNTER,
                       limits=limits)
    assert many.refused and "60 entries" in many.error
    cut = read_upload(write(tmp_path, "c.zip", zip_of({"a.txt": b"hello"})[:-30]), "c.zip", COUNTER)
    assert cut.refused and "zip" in cut.error


def test_500_files_at_once_are_capped_with_one_message(tmp_path: Path) -> None:
    paths = [(write(tmp_path, f"f{i}.txt", b"x"), f"f{i}.txt") for i in range(500)]
    got = read_uploads(paths, COUNTER)
    assert len(got) == 101 and all(not a.refused for a in got[:100])
    assert got[-1].refused and "400 more files" in got[-1].name and "at most 100" in got[-1].error
    assert len(read_uploads(paths[:10], COUNTER, already=95)) == 6


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=4096), st.sampled_from(["a.txt", "b.pdf", "c.zip", "noext"]),
       st.sampled_from([b"", b"%PDF-1.7\n", b"PK\x03\x04"]))
def test_any_bytes_give_an_attachment_never_an_exception(tmp_path: Path, data: bytes, name: str,
                                                         prefix: bytes) -> None:
    got = read_upload(write(tmp_path, "upload", prefix + data), name, COUNTER)
    assert got.refused == (got.kind == "refused")
    assert got.error or got.text is not None


def test_tokenizer_json_from_the_model_folder_gives_exact_counts_offline(tmp_path: Path) -> None:
    vocab = {"[UNK]": 0, "hello": 1, "world": 2, ",": 3}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    counter = TokenCounter.for_model(tmp_path)
    assert counter.exact
    count = counter.count("hello, world hello")
    assert count.tokens == 4 and count.exact and count.label() == "4 tokens (tokenizer.json)"
    assert counter.head("hello, world hello", 2) == "hello,"
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "tokenizer.json").write_text("{not json")
    assert not TokenCounter.for_model(tmp_path / "bad").exact


def test_attachments_travel_in_the_message_as_document_blocks(tmp_path: Path) -> None:
    a = read_upload(write(tmp_path, "x.py", b"print('</document>')\n"), 'we"ird.py', COUNTER)
    bad = read_upload(write(tmp_path, "y.bin", b"\x00\x01"), "y.bin", COUNTER)
    message = message_with("Explain this", [a, bad])
    blocks = DOCUMENT_BLOCK.findall(message)
    assert len(blocks) == 1 and blocks[0][0] == "we&quot;ird.py" and message.endswith("\n\nExplain this")


def test_the_budget_offers_what_each_way_out_would_cut() -> None:
    assert context_length(None) == 1_048_576
    fits = Budget(limit=1000, system=10, history=(100, 100), attachments=(200,), typed=10, max_tokens=100)
    assert fits.used == 520 and fits.over == 0 and fits.turns_to_drop() == 0
    over = Budget(limit=1000, system=10, history=(300, 200, 100), attachments=(500, 50), typed=10, max_tokens=100)
    assert over.over == 270
    assert over.turns_to_drop() == 1  # the oldest 300 free enough
    assert over.trim_largest_to() == (0, 230)
    hopeless = Budget(limit=100, system=10, history=(5,), attachments=(50,), typed=10, max_tokens=100)
    assert hopeless.turns_to_drop() is None and hopeless.trim_largest_to() is None
    assert over.meter()["parts"] == {"system": 10, "history": 600, "attachments": 550, "message": 10,
                                     "max_tokens": 100}


@pytest.mark.parametrize("size", [0, 1])
def test_empty_and_tiny_files(tmp_path: Path, size: int) -> None:
    got = read_upload(write(tmp_path, "e.txt", b"a" * size), "e.txt", COUNTER)
    assert not got.refused and got.size == size
