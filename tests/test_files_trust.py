"""What a code file can and cannot change: rtol, work parameters, decompressed sizes, the saved matrix, old formats."""

import io
import json
import tracemalloc
import warnings
import zipfile

import numpy as np
import pytest

import gradcodes as gc
from gradcodes.cli import main


def _meta(path):
    return json.loads(str(np.load(path)["meta"]))


def _rewrite(path, out, **changes):
    data = dict(np.load(path))
    for key, value in changes.items():
        data[key] = np.array(json.dumps(value)) if key == "meta" else value
    np.savez(out, **data)
    return out


def _saved(tmp_path, code, name="c.npz"):
    path = tmp_path / name
    gc.save_code(code, path)
    return path


def _quiet_load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return gc.load_code(path, **kw)


class _Peak:
    """Peak memory traced by tracemalloc inside the block (numpy reports its buffers to tracemalloc)."""

    def __enter__(self):
        tracemalloc.start()
        return self

    def __exit__(self, *exc):
        self.peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()


# --------------------------------------------------------------------------------------------------------- rtol


@pytest.fixture
def loose_file(tmp_path):
    """fractional_repetition(12, 3) with B[0, 0] = 0.25 and rtol = 0.9: wrong, and asking to be accepted."""
    path = _saved(tmp_path, gc.fractional_repetition(12, 3))
    meta = _meta(path)
    meta["rtol"] = 0.9
    B = np.load(path)["B"].astype(float)
    B[0, 0] = 0.25
    return _rewrite(path, tmp_path / "loose.npz", meta=meta, B=B)


def test_a_file_cannot_loosen_rtol(loose_file):
    with pytest.warns(RuntimeWarning, match=r"rtol=0\.9 is looser than the 1e-08"):
        code = gc.load_code(loose_file)
    assert code.rtol == 1e-8
    G = np.random.default_rng(0).standard_normal((12, 3))
    responders = [0, 4, 5, 6, 7, 8, 9, 10, 11]                     # needs worker 0's edited row
    with pytest.raises(gc.DecodingError):
        code.decode(responders, code.encode(G))
    assert not gc.verify(code)


def test_the_caller_may_accept_a_looser_rtol(loose_file):
    assert _quiet_load(loose_file, rtol=0.95).rtol == 0.9
    assert _quiet_load(loose_file, rtol=0.5).rtol == 0.5
    with pytest.raises(ValueError, match="rtol"):
        gc.load_code(loose_file, rtol=1.5)
    with pytest.raises(TypeError, match="rtol"):
        gc.load_code(loose_file, rtol="loose")


def test_a_tighter_rtol_is_kept(tmp_path):
    code = gc.fractional_repetition(6, 1)
    code.rtol = 1e-13
    assert gc.load_code(_saved(tmp_path, code)).rtol == 1e-13


def test_cli_verify_of_a_loosened_file_fails(loose_file, capsys):
    assert main(["verify", str(loose_file)]) == 1
    out, err = capsys.readouterr()
    assert "FAILS" in out
    assert "gradcodes: warning:" in err and "looser than" in err and "Traceback" not in err
    assert main(["verify", str(loose_file), "--rtol", "0.95"]) == 0        # the caller's explicit choice
    # a scheme name is verified to --rtol (it was refused: "set rtol when building a code in Python")
    capsys.readouterr()
    assert main(["verify", "cyclic_repetition", "-n", "10", "-s", "2", "--rtol", "1e-6"]) == 0
    assert "RECOVERY PROVEN to rtol=1e-06" in capsys.readouterr().out
    assert main(["verify", "fractional_repetition", "-n", "4", "-s", "1", "--rtol", "2"]) == 2
    assert "rtol must be" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------- no search, bounded work


@pytest.fixture(scope="module")
def grouped(tmp_path_factory):
    code = gc.grouped_random(50, 12)
    return code, _saved(tmp_path_factory.mktemp("grouped"), code)


@pytest.mark.parametrize("edit", ["no_seeds", "partial_seeds"])
@pytest.mark.parametrize("candidates", [1, 10_000])
def test_grouped_random_file_is_never_searched(tmp_path, grouped, edit, candidates):
    path = grouped[1]
    meta = _meta(path)
    if edit == "no_seeds":
        del meta["params"]["block_seeds"]
    else:
        meta["params"]["block_seeds"].pop("17")
    meta["params"]["candidates"] = candidates
    with pytest.raises(gc.CodeFileError, match="without search|never by a search"):
        gc.load_code(_rewrite(path, tmp_path / "bad.npz", meta=meta))


def test_ye_abbe_file_without_its_stride_is_refused(tmp_path):
    path = _saved(tmp_path, gc.ye_abbe(12, 3, 2))
    meta = _meta(path)
    del meta["params"]["stride"]
    with pytest.raises(gc.CodeFileError, match="record its stride"):
        gc.load_code(_rewrite(path, tmp_path / "bad.npz", meta=meta))


def test_grouped_random_file_rebuilds_from_its_seeds(tmp_path, grouped):
    code, path = grouped
    meta = _meta(path)
    meta["params"].update(candidates=10_000, limit=10**9)              # search options: ignored, nothing searched
    back = gc.load_code(_rewrite(path, tmp_path / "opts.npz", meta=meta))
    assert back.default_decoder == "grouped" and back.B.tobytes() == code.B.tobytes()


def test_coded_reduce_units_are_checked_before_the_rebuild(tmp_path):
    path = _saved(tmp_path, gc.coded_reduce(3, 2, 1))
    meta = _meta(path)
    meta["params"]["P"] = 7_500_000
    bad = _rewrite(path, tmp_path / "bad.npz", meta=meta)
    with _Peak() as mem, pytest.raises(gc.CodeFileError) as info:
        gc.load_code(bad)
    assert mem.peak < 50 * 2**20                                 # the rebuild used to allocate 1.5 GB
    assert "P = 7500000 in the parameters" in str(info.value)


@pytest.mark.parametrize("key, value", [("n", 30000), ("s", 2), ("k", 30000)])
def test_coded_reduce_inner_record_is_checked(tmp_path, key, value):
    path = _saved(tmp_path, gc.coded_reduce(3, 2, 1))
    meta = _meta(path)
    meta["params"]["inner"]["params"][key] = value
    with pytest.raises(gc.CodeFileError, match=f"{key} = {value} in the parameters"):
        gc.load_code(_rewrite(path, tmp_path / "bad.npz", meta=meta))
    meta = _meta(path)
    meta["params"]["inner"]["B"] = meta["params"]["inner"]["B"][:2]
    with pytest.raises(gc.CodeFileError, match="inner code"):
        gc.load_code(_rewrite(path, tmp_path / "rows.npz", meta=meta))


# ----------------------------------------------------------------------------------------- decompressed sizes


def _npy_header(shape, dtype):
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": False, "shape": shape})
    return buf.getvalue()


def _bomb(tmp_path, meta_path, entries, name):
    """A deflated archive: the meta of ``meta_path`` and, per entry, a header and ``nbytes`` zero bytes."""
    out = tmp_path / name
    with zipfile.ZipFile(meta_path) as z:
        meta_bytes = z.read("meta.npy")
    chunk = bytes(2**24)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        z.writestr("meta.npy", meta_bytes)
        for member, shape, dtype, nbytes in entries:
            with z.open(member, "w", force_zip64=True) as f:
                f.write(_npy_header(shape, dtype))
                for _ in range(nbytes // len(chunk)):
                    f.write(chunk)
                f.write(bytes(nbytes % len(chunk)))
    return out


@pytest.fixture(scope="module")
def bombs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bombs")
    real = _saved(tmp, gc.GradientCode(np.eye(3), 0), "real.npz")
    exact = _saved(tmp, gc.GradientCode(np.eye(3, dtype=int), 0, field="rational"), "exact.npz")
    return {
        "zeros": _bomb(tmp, real, [("B.npy", (10_000, 10_000), "<f8", 8 * 10**8)], "zeros.npz"),
        "strings": _bomb(tmp, exact, [(f"B_{x}.npy", (100, 100), "<U10000", 4 * 10**8) for x in ("num", "den")],
                         "strings.npz"),
        "long_numbers": _bomb(tmp, exact, [(f"B_{x}.npy", (3, 3), "<U10000", 4 * 9 * 10**4) for x in ("num", "den")],
                              "long.npz"),
    }


@pytest.mark.parametrize("which, message", [("zeros", "compressed entries expand to"),
                                            ("strings", "compressed entries expand to"),
                                            ("long_numbers", "numbers of up to 10,000 digits")])
def test_deflate_bombs_are_refused_from_their_headers(bombs, which, message):
    assert bombs[which].stat().st_size < 8 * 10**6                 # small files, large claims
    with _Peak() as mem, pytest.raises(gc.CodeFileError) as info:
        gc.load_code(bombs[which])
    assert mem.peak < 20 * 2**20                                 # they used to decompress 0.8 to 1.6 GB
    assert message in str(info.value)


def test_a_compressed_file_within_the_bounds_loads(tmp_path):
    path = tmp_path / "small.npz"
    code = gc.fractional_repetition(6, 2)
    np.savez_compressed(path, **dict(np.load(_saved(tmp_path, code))))
    assert gc.load_code(path).B.tobytes() == code.B.tobytes()


def test_the_header_shape_is_checked_before_the_data(tmp_path):
    # a stored (uncompressed) entry whose header claims far more data than the file holds
    path = _saved(tmp_path, gc.uncoded(3))
    bad = tmp_path / "claims.npz"
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(bad, "w") as zout:
        zout.writestr("meta.npy", zin.read("meta.npy"))
        zout.writestr("B.npy", _npy_header((5000, 5000), "<f8"))
    with _Peak() as mem, pytest.raises(gc.CodeFileError, match=r"shape \(5000, 5000\)"):
        gc.load_code(bad)
    assert mem.peak < 20 * 2**20


# ------------------------------------------------------------------------------------------ the saved matrix


def test_a_ye_abbe_file_keeps_its_own_matrix(tmp_path):
    code = gc.ye_abbe(12, 3, 2)
    path = _saved(tmp_path, code)
    back = gc.load_code(path)                                        # the same machine's rebuild: bitwise equal
    assert back.default_decoder == code.default_decoder and back.B.tobytes() == code.B.tobytes()
    B = np.load(path)["B"].copy()
    i, j = np.argwhere(B != 0)[0]
    B[i, j] = np.nextafter(B[i, j], np.inf)                    # one ulp: what another machine's build may differ by
    with pytest.warns(RuntimeWarning, match="differs from the 'ye_abbe' construction"):
        back = gc.load_code(_rewrite(path, tmp_path / "ulp.npz", B=B))
    assert back.B.tobytes() == B.tobytes()                      # never swapped for the local rebuild
    assert back.default_decoder == "nullspace" and type(back) is gc.GradientCode


def test_a_tree_whose_matrix_differs_is_refused(tmp_path):
    path = _saved(tmp_path, gc.coded_reduce(3, 2, 1))
    B = np.load(path)["B"].copy()
    i, j = np.argwhere(B != 0)[0]
    B[i, j] = np.nextafter(B[i, j], np.inf)
    with pytest.warns(RuntimeWarning), pytest.raises(gc.CodeFileError, match="cannot restore a CodedReduceCode"):
        gc.load_code(_rewrite(path, tmp_path / "ulp.npz", B=B))


def test_format_1_cyclic_repetition_loads_as_built(tmp_path):
    code = gc.cyclic_repetition(9, 3, rng=4, refine=0)
    path = _saved(tmp_path, code)
    meta = _meta(path)
    meta["format"] = 1
    del meta["shape"]
    meta["params"].pop("refine", None)                          # format 1 left the then default refine=0 out
    back = gc.load_code(_rewrite(path, tmp_path / "v1.npz", meta=meta))
    assert back.params["refine"] == 0 and back.B.tobytes() == code.B.tobytes()
    new = gc.load_code(path)                                         # format 2: the parameters as recorded
    assert _meta(path)["format"] == 2 and new.params == code.params


def test_declared_shape_must_match(tmp_path):
    path = _saved(tmp_path, gc.GradientCode(np.eye(4), 0))
    meta = _meta(path)
    meta["shape"] = [4, 5]
    with pytest.raises(gc.CodeFileError, match="shape"):
        gc.load_code(_rewrite(path, tmp_path / "shape.npz", meta=meta))


def test_cli_refusals_exit_2_on_one_line(tmp_path, grouped, capsys):
    meta = _meta(grouped[1])
    del meta["params"]["block_seeds"]
    meta["params"]["candidates"] = 10_000
    bad = _rewrite(grouped[1], tmp_path / "bad.npz", meta=meta)
    for command in ("verify", "evaluate"):
        assert main([command, str(bad)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("gradcodes: error: ") and "block_seeds" in err and err.count("\n") == 1


# ------------------------------------------------------------------ parameters bounded by the file before any work


def _refused_quickly(path, match):
    """``path`` is refused with ``match`` in under a second and 100 MB of traced memory."""
    import time

    start = time.perf_counter()
    with _Peak() as mem, pytest.raises(gc.CodeFileError, match=match):
        gc.load_code(path)
    assert time.perf_counter() - start < 1.0 and mem.peak < 100 * 2**20


def test_adversarial_placement_is_bounded_by_the_matrix(tmp_path):
    # a 16-worker file whose placement claims 200 x 200 workers and partitions with nodes="spread": the
    # rebuild used to run the angle search on it (minutes, then 4.7 GB and a MemoryError)
    path = _saved(tmp_path, gc.adversarial_gc(np.eye(8, dtype=int) | np.roll(np.eye(8, dtype=int), 1, 1)
                                              | np.roll(np.eye(8, dtype=int), 2, 1), 0, 1))
    meta = _meta(path)
    meta["params"].update(placement=np.ones((200, 200), dtype=int).tolist(), nodes="spread")
    _refused_quickly(_rewrite(path, tmp_path / "bad.npz", meta=meta), r"'placement' must be an 8 x 8 0/1 matrix")


def test_a_spread_file_is_rebuilt_from_its_angles_never_searched(tmp_path):
    S = np.eye(9, dtype=int) | np.roll(np.eye(9, dtype=int), 1, 1) | np.roll(np.eye(9, dtype=int), 3, 1)
    code = gc.adversarial_gc(S, 0, 1, nodes="spread")
    assert sorted(code.params["angles"]) == list(range(9))
    path = _saved(tmp_path, code)
    assert gc.load_code(path).default_decoder == "interpolation"
    meta = _meta(path)
    del meta["params"]["angles"]
    with pytest.raises(gc.CodeFileError, match="record its 'angles'"):
        gc.load_code(_rewrite(path, tmp_path / "bad.npz", meta=meta))


@pytest.mark.parametrize("first, match", [
    ({"family": "cyclic_mds", "params": {"n": 10000, "s": 1, "field": "real"}, "shape": [2, 2]},
     "n = 10000 in the parameters, but the saved matrix has n = 2"),
    ({"family": "cyclic_mds", "params": {"n": 10000, "s": 1, "field": "real"}}, r"must give its .*'shape'"),
    ({"family": "cyclic_mds", "params": {"n": 10000, "s": 1, "field": "real"}, "shape": [10000, 10000]},
     "do not make the saved 4 x 4 matrix"),
    ({"family": "bibd_code", "params": {"design": "projective_plane", "q": 97}, "shape": [2, 2]},
     r"q = 97 must be an integer in \[2, "),
])
def test_product_factors_are_bounded_by_the_matrix(tmp_path, first, match):
    # a 4 x 4 product whose first factor asks for cyclic_mds(10000, 1): used to build it (6.4 s, 1.7 GB)
    f = gc.fractional_repetition(2, 1)
    path = _saved(tmp_path, gc.product_code(f, f))
    meta = _meta(path)
    meta["params"]["first"] = first
    _refused_quickly(_rewrite(path, tmp_path / "bad.npz", meta=meta), match)


def test_a_rebuild_allocates_no_more_than_the_file(tmp_path):
    # the backstop: a parameter no check names (here the blocks of a design) still cannot make a rebuild allocate
    # more than max(n, k m)^2 entries, whatever the family
    from gradcodes._io.files import rebuild_cap

    assert rebuild_cap((4, 6)) == 36
    f = gc.fractional_repetition(2, 1)
    path = _saved(tmp_path, gc.product_code(f, f))
    meta = _meta(path)
    meta["params"]["first"] = {"family": "uncoded", "params": {"n": 2, "k": 2, "field": "real"}, "shape": [2, 2]}
    meta["params"]["second"] = {"family": "bibd_code", "shape": [2, 2],
                                "params": {"design": [[0, 5000], [1, 5000]], "field": "real"}}
    _refused_quickly(_rewrite(path, tmp_path / "bad.npz", meta=meta), "rebuild asks for more than the saved 4 x 4")


def _sparse_file(path, cols, m=1):
    meta = {"format": 2, "type": "GradientCode", "name": "x", "family": None, "params": {}, "m": m,
            "field": "real", "default_decoder": "nullspace", "s": 0, "shape": [3, cols]}
    np.savez(path, meta=np.array(json.dumps(meta)), B_indptr=np.arange(4, dtype=np.int64),
             B_indices=np.array([0, 1, 2], dtype=np.int64), B_data=np.ones(3))
    return path


@pytest.mark.parametrize("cols", [3 * 10**8, 10**11])
def test_sparse_columns_are_bounded_by_the_non_zeros(tmp_path, cols):
    # 1.7 KB, 3 non-zeros: 3e8 columns used to take 2.4 GB (the dense target), 1e11 a MemoryError
    _refused_quickly(_sparse_file(tmp_path / "wide.npz", cols), r"columns for 3 non-zeros in 3 rows")


def test_sparse_target_is_bounded(tmp_path):
    with pytest.raises(gc.CodeFileError, match=r"target has m x k m = 6 x 6 = 36 entries, more than the bound 30"):
        gc.load_code(_sparse_file(tmp_path / "m.npz", 6, m=6), max_entries=30)
    assert gc.load_code(_sparse_file(tmp_path / "ok.npz", 3)).k == 3


def test_cli_verify_of_a_too_wide_sparse_file_exits_2_on_one_line(tmp_path, capsys):
    assert main(["verify", str(_sparse_file(tmp_path / "wide.npz", 10**11))]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gradcodes: error: ") and "100,000,000,000 columns" in err and err.count("\n") == 1


def test_memory_error_is_a_code_file_error(tmp_path, monkeypatch):
    import gradcodes._io.files as io_

    path = _saved(tmp_path, gc.uncoded(3))

    def boom(*args, **kwargs):
        raise MemoryError("Unable to allocate 745. GiB")

    monkeypatch.setattr(io_, "_restore", boom)
    with pytest.raises(gc.CodeFileError, match="not enough memory"):
        gc.load_code(path)


@pytest.mark.parametrize("family, key", [("heterogeneous_exact", "speeds"), ("margulis_code", "N")])
def test_other_families_size_parameters_are_checked(tmp_path, family, key):
    code = gc.heterogeneous_exact([1, 1, 2, 2], 1) if family == "heterogeneous_exact" else gc.margulis_code(3)
    path = _saved(tmp_path, code)
    meta = _meta(path)
    meta["params"][key] = ["1"] * 3000 if key == "speeds" else 3000
    _refused_quickly(_rewrite(path, tmp_path / "bad.npz", meta=meta), f"{key}")
