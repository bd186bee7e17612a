"""Code files are untrusted input: every malformed file raises CodeFileError, quickly and without big allocations."""

import io
import json
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gradcodes as gc


def _saved(tmp_path, code, name="c.npz"):
    path = tmp_path / name
    gc.save_code(code, path)
    return path


def _rewrite(tmp_path, path, name="edited.npz", **changes):
    """A copy of a code file with some entries replaced (``meta`` given as a dict)."""
    data = dict(np.load(path))
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        elif key == "meta" and isinstance(value, dict):
            data["meta"] = np.array(json.dumps(value))
        else:
            data[key] = value
    out = tmp_path / name
    np.savez(out, **data)
    return out


def _meta(path):
    return json.loads(str(np.load(path)["meta"]))


def test_load_is_a_value_error_subclass():
    assert issubclass(gc.CodeFileError, ValueError)


def test_parameters_are_checked_before_the_rebuild(tmp_path):
    # a small file whose parameters claim n = 30000: used to rebuild a 30000 x 30000 code (30 s, 6.7 GiB)
    for code, key in [(gc.fractional_repetition(6, 1), "n"), (gc.expander_code(8, 3, rng=1), "n"),
                      (gc.ye_abbe(7, 2, 2), "n"), (gc.ye_abbe(7, 2, 2), "m"), (gc.uncoded(4), "k")]:
        path = _saved(tmp_path, code)
        meta = _meta(path)
        meta["params"][key] = 30000
        bad = _rewrite(tmp_path, path, meta=meta)
        with pytest.raises(gc.CodeFileError, match=f"{key} = 30000 in the parameters"):
            gc.load_code(bad)


def test_coded_reduce_tree_size_is_checked(tmp_path):
    path = _saved(tmp_path, gc.coded_reduce(3, 2, 1))
    meta = _meta(path)
    meta["params"]["L"] = 40                       # 3 + 9 + ... + 3**40 workers
    with pytest.raises(gc.CodeFileError, match="does not have the 12 workers"):
        gc.load_code(_rewrite(tmp_path, path, meta=meta))


def _npy_header_only(shape, dtype="<f8"):
    """The bytes of a .npy entry whose header claims ``shape`` but that holds no data."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": False, "shape": shape})
    return buf.getvalue()


def test_huge_matrix_is_refused_from_its_header(tmp_path):
    path = _saved(tmp_path, gc.uncoded(3))
    bad = tmp_path / "huge.npz"
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(bad, "w") as zout:
        zout.writestr("meta.npy", zin.read("meta.npy"))
        zout.writestr("B.npy", _npy_header_only((10**6, 10**6)))
    with pytest.raises(gc.CodeFileError, match=r"more than the bound .*max_entries"):
        gc.load_code(bad)


def test_max_entries_override(tmp_path):
    path = _saved(tmp_path, gc.uncoded(20))
    with pytest.raises(gc.CodeFileError, match="400 entries, more than the bound 100"):
        gc.load_code(path, max_entries=100)
    assert gc.load_code(path, max_entries=400).n == 20
    with gc.limits.raised(entries=100), pytest.raises(gc.CodeFileError, match="gradcodes.limits.entries"):
        gc.load_code(path)


def test_pickled_object_arrays_are_never_loaded(tmp_path):
    path = _saved(tmp_path, gc.uncoded(3))
    bad = _rewrite(tmp_path, path, B=np.array([[1, 0, 0], [0, 1, 0], [0, 0, object()]], dtype=object))
    with pytest.raises(gc.CodeFileError, match="pickle"):
        gc.load_code(bad)


@pytest.mark.parametrize("content", [b"", b"hello", b"PK\x03\x04garbage", b"\x93NUMPY\x01\x00"])
def test_non_npz_files(tmp_path, content):
    path = tmp_path / "x.npz"
    path.write_bytes(content)
    with pytest.raises(gc.CodeFileError, match="not a gradcodes code file"):
        gc.load_code(path)


def test_plain_npy_and_foreign_npz(tmp_path):
    np.save(tmp_path / "a.npy", np.eye(3))
    with pytest.raises(gc.CodeFileError):
        gc.load_code(tmp_path / "a.npy")
    np.savez(tmp_path / "f.npz", x=np.zeros(3))
    with pytest.raises(gc.CodeFileError, match="unexpected entry 'x.npy'"):
        gc.load_code(tmp_path / "f.npz")
    np.savez(tmp_path / "g.npz", B=np.eye(3))
    with pytest.raises(gc.CodeFileError, match="no 'meta' entry"):
        gc.load_code(tmp_path / "g.npz")


def test_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        gc.load_code(tmp_path / "nope.npz")


@pytest.mark.parametrize("edit", [
    lambda m: m.pop("s"),                                  # KeyError today
    lambda m: m.update(s="two"),
    lambda m: m.update(m=0),                               # ZeroDivisionError today
    lambda m: m.update(m=True),
    lambda m: m.update(params=[1, 2]),                     # AttributeError today
    lambda m: m.update(field="quaternion"),
    lambda m: m.update(rtol=-1.0),
    lambda m: m.update(format=99),
    lambda m: m.update(s=7),
    lambda m: m.update(straggle_probabilities=["0.1"]),
    lambda m: m.update(type="GradientCode", s=None),
])
def test_bad_parameters(tmp_path, edit):
    path = _saved(tmp_path, gc.fractional_repetition(6, 1))
    meta = _meta(path)
    edit(meta)
    with pytest.raises(gc.CodeFileError):
        gc.load_code(_rewrite(tmp_path, path, meta=meta))


def test_bad_matrices(tmp_path):
    path = _saved(tmp_path, gc.fractional_repetition(6, 1))
    for B in [np.zeros(6), np.zeros((6, 6, 1)), np.full((6, 6), np.nan), np.array([["a"] * 6] * 6)]:
        with pytest.raises(gc.CodeFileError):
            gc.load_code(_rewrite(tmp_path, path, B=B))
    with pytest.raises(gc.CodeFileError, match="not a JSON|invalid gradcodes parameters"):
        gc.load_code(_rewrite(tmp_path, path, meta=np.array("{not json")))
    rpath = _saved(tmp_path, gc.fractional_repetition(6, 1, field="rational"), "r.npz")
    den = np.load(rpath)["B_den"].copy()
    den[0, 0] = "0"
    with pytest.raises(gc.CodeFileError, match="non-zero denominators"):
        gc.load_code(_rewrite(tmp_path, rpath, B_den=den))
    gpath = _saved(tmp_path, gc.cyclic_mds(7, 2).in_field("GF"), "g.npz")
    with pytest.raises(gc.CodeFileError, match="entries must lie"):
        gc.load_code(_rewrite(tmp_path, gpath, B_gf=np.full((7, 7), 10**6)))


def test_truncated_files(tmp_path):
    path = _saved(tmp_path, gc.cyclic_mds(7, 2))
    raw = path.read_bytes()
    for cut in range(0, len(raw), max(1, len(raw) // 40)):
        bad = tmp_path / "cut.npz"
        bad.write_bytes(raw[:cut])
        with pytest.raises(gc.CodeFileError):
            gc.load_code(bad)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_fuzz_bytes(tmp_path, data):
    """Any corruption of a valid file loads a code or raises CodeFileError (never another exception)."""
    path = tmp_path / "src.npz"
    if not path.exists():
        gc.save_code(gc.fractional_repetition(6, 2), path)
    raw = bytearray(path.read_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(1, len(raw)))
    bad = tmp_path / "fuzz.npz"
    bad.write_bytes(bytes(raw[:cut]))
    try:
        code = gc.load_code(bad)
    except gc.CodeFileError:
        return
    assert isinstance(code, gc.LinearCode)


def test_rtol_and_decoders_survive_save_load(tmp_path):
    strict = gc.GradientCode(gc.cyclic_repetition(7, 2, rng=1).B, 2, rtol=1e-14)
    back = gc.load_code(_saved(tmp_path, strict))
    assert back.rtol == 1e-14
    fam = gc.cyclic_repetition(7, 2, rng=1)
    fam.rtol = 1e-3
    path = _saved(tmp_path, fam, "fam.npz")
    with pytest.warns(RuntimeWarning, match="looser than"):      # a file cannot loosen the default on its own
        assert gc.load_code(path).rtol == 1e-8
    assert gc.load_code(path, rtol=1e-2).rtol == 1e-3                  # the caller accepts it
    for code in [gc.cyclic_mds(7, 2).in_field("GF"), gc.ye_abbe(7, 2, 2).in_field("GF"),
                 gc.cyclic_mds(12, 3), gc.coded_reduce(3, 2, 1)]:
        back = gc.load_code(_saved(tmp_path, code, "x.npz"))
        assert back.default_decoder == code.default_decoder
        assert sorted(back.decoders) == sorted(code.decoders)
    code = gc.cyclic_mds(12, 3)
    code.default_decoder = "barycentric"
    assert gc.load_code(_saved(tmp_path, code, "d.npz")).default_decoder == "barycentric"


def test_save_code_writes_exactly_the_path_it_is_given(tmp_path):
    """``save_code(code, "c1.json")`` wrote ``c1.json.npz`` (numpy appends the suffix to a name)."""
    code = gc.fractional_repetition(6, 2)
    gc.save_code(code, tmp_path / "c1.json")
    gc.save_code(code, str(tmp_path / "c2"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c1.json", "c2"]
    for name in ("c1.json", "c2"):
        back = gc.load_code(tmp_path / name)
        assert repr(back) == repr(code) and np.array_equal(back.B, code.B)
