"""One meaning per name: the renamed keywords and functions keep working under their former names with a
DeprecationWarning (the test configuration turns gradcodes' own deprecations into errors everywhere else), the
new names are the ones in every public signature, and files written with the former parameter names still load."""

from __future__ import annotations

import inspect
import json
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcodes as gc
import gradcodes.testing as gt


def test_coded_reduce_branching_and_its_deprecated_alias():
    code = gc.coded_reduce(3, 2, 1)
    assert code.n == code.N == 12 and code.branching == 3 and code.params["branching"] == 3
    assert "n" not in code.params
    with pytest.warns(DeprecationWarning, match=r"^n= is deprecated, use branching="):
        old = gc.coded_reduce(n=3, L=2, s=1)
    assert old == code
    assert gc.coded_reduce(branching=3, L=2, s=1) == code
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError, match="not both"):
        gc.coded_reduce(n=3, branching=3, L=2, s=1)
    with pytest.warns(DeprecationWarning, match="branching="):
        assert gc.coded_reduce_load(n=3, L=2, s=1) == gc.coded_reduce_load(branching=3, L=2, s=1)


@pytest.mark.parametrize(("fn", "args", "kwargs"), [
    (gc.stochastic_gc, (6,), dict(degree=2, p=0.2, rng=0)),
    (gc.bernoulli_gc, (6,), dict(degree=2, rng=0)),
    (gc.erasurehead, (6,), dict(degree=2)),
    (gc.optimal_decoding, (6,), dict(degree=3, rng=0)),
])
def test_baselines_take_degree_and_the_deprecated_d(fn, args, kwargs):
    code = fn(*args, **kwargs)
    assert code.params["degree"] == kwargs["degree"] and "d" not in code.params
    old = dict(kwargs)
    old["d"] = old.pop("degree")
    with pytest.warns(DeprecationWarning, match=r"^d= is deprecated, use degree="):
        assert fn(*args, **old) == code


def test_batch_size_everywhere():
    tree = gc.coded_reduce(3, 2, 1)
    with pytest.warns(DeprecationWarning, match=r"^batch= is deprecated, use batch_size="):
        old = gc.verify_tree(tree, batch=64)
    assert old.patterns_checked == gc.verify_tree(tree, batch_size=64).patterns_checked
    het = gc.heterogeneous(["1/10", "1/5", "1/2"], 3)
    with pytest.warns(DeprecationWarning, match="batch_size="):
        a = gc.evaluate_approximate(het, batch=8, method="enumerate")
    b = gc.evaluate_approximate(het, batch_size=8, method="enumerate")
    assert a.expected_error == b.expected_error and a.bias.tolist() == b.bias.tolist()


def test_stop_on_failure_defaults_agree():
    defaults = {fn.__name__: inspect.signature(fn).parameters["stop_on_failure"].default
                for fn in (gc.verify, gc.verify_tree)}
    assert set(defaults.values()) == {True}, defaults


def test_load_code_save_code_and_the_deprecated_load_save(tmp_path):
    code = gc.cyclic_repetition(6, 2, rng=0)
    path = os.fspath(tmp_path / "c.npz")
    gc.save_code(code, path)
    assert gc.load_code(path) == code
    with pytest.warns(DeprecationWarning, match=r"^gradcodes\.load is deprecated, use gradcodes\.load_code"):
        assert gc.load(path) == code
    with pytest.warns(DeprecationWarning, match=r"^gradcodes\.save is deprecated, use gradcodes\.save_code"):
        gc.save(code, os.fspath(tmp_path / "d.npz"))
    assert gc.load_code(os.fspath(tmp_path / "d.npz")) == code


def test_a_tree_file_written_with_n_still_loads_with_its_tree_decoder(tmp_path):
    code = gc.coded_reduce(3, 2, 1)
    path = os.fspath(tmp_path / "tree.npz")
    gc.save_code(code, path)
    with np.load(path) as f:
        entries = {k: f[k] for k in f.files}
    meta = json.loads(str(entries["meta"]))
    meta["params"]["n"] = meta["params"].pop("branching")          # as files written before the rename
    entries["meta"] = np.array(json.dumps(meta))
    np.savez(path, **entries)
    back = gc.load_code(path)
    assert isinstance(back, gc.CodedReduceCode) and back.branching == 3 and back == code


@settings(max_examples=10)
@given(st.integers(1, 9), st.data())
def test_partial_gradients_takes_length(length, data):
    G = data.draw(gt.partial_gradients(gc.fractional_repetition(4, 1), length=length))
    assert G.shape == (4, length)


def test_partial_gradients_deprecated_p():
    with pytest.warns(DeprecationWarning, match=r"^p= is deprecated, use length="):
        gt.partial_gradients(gc.fractional_repetition(4, 1), p=3)


def _public_functions():
    for mod in (gc, gt):
        for name in mod.__all__:
            obj = getattr(mod, name)
            if callable(obj) and not isinstance(obj, type) and name not in ("simulate", "load", "save"):
                yield f"{mod.__name__}.{name}", obj


def test_no_public_signature_uses_a_former_name():
    # batch_size (not batch), degree (not d), branching for a tree's children (never n), length for a gradient
    # length (p is a probability); the simulator's n is renamed with the simulator itself
    bad = []
    for name, fn in _public_functions():
        params = inspect.signature(fn).parameters
        bad += [f"{name}({p}=)" for p in params if p in ("batch", "d")
                and name != "gradcodes.random_regular_graph"]        # its d= is a documented deprecated keyword
        if "branching" in params or "L" in params:
            bad += [f"{name}(n=)" for p in params if p == "n"]
        ann = params["p"].annotation if "p" in params else None
        if ann is not None and "int" in str(ann) and "Probabilit" not in str(ann):
            bad.append(f"{name}(p: {ann})")
    assert not bad, bad
