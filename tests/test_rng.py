"""Random state as scientific Python's SPEC 7 recommends: one ``rng`` parameter everywhere (no ``seed=`` alias)."""

import inspect
import warnings

import numpy as np
import pytest

import gradcodes as gc
from gradcodes.mpi import FixedDelay, ShiftedExponential, predict
from gradcodes.mpi._problem import SyntheticProblem

# every public callable that draws random numbers, with small valid arguments
RANDOM = {
    "cyclic_repetition": lambda **kw: gc.cyclic_repetition(6, 2, **kw),
    "ye_abbe": lambda **kw: gc.ye_abbe(6, 1, 2, nodes="random", **kw),
    "coded_reduce": lambda **kw: gc.coded_reduce(3, 2, 1, field="rational", **kw),
    "expander_code": lambda **kw: gc.expander_code(8, 3, **kw),
    "random_regular_graph": lambda **kw: gc.random_regular_graph(8, 3, **kw),
    "stochastic_gc": lambda **kw: gc.stochastic_gc(6, 2, 0.2, assignment="random", **kw),
    "bernoulli_gc": lambda **kw: gc.bernoulli_gc(6, 2, **kw),
    "optimal_decoding": lambda **kw: gc.optimal_decoding(6, 3, **kw),
    "exponential_straggle_probabilities": lambda **kw: gc.exponential_straggle_probabilities(6, 1.5, **kw),
    "simulate": lambda **kw: gc.simulate("CR", iters=10, **kw),
    "verify": lambda **kw: gc.verify(gc.cyclic_repetition(12, 4, rng=0), limit=10, samples=20, **kw),
    "worst_case_error": lambda **kw: gc.worst_case_error(gc.expander_code(10, 3, rng=0), 4, limit=5, samples=10,
                                                         search_steps=1, **kw),
    "evaluate_approximate": lambda **kw: gc.evaluate_approximate(gc.bernoulli_gc(6, 2, rng=0), p=0.2,
                                                                 method="montecarlo", samples=50, **kw),
    "recommend": lambda **kw: gc.recommend(7, 2, samples=5, quick=True, **kw),
    "verify_tree": lambda **kw: gc.verify_tree(gc.coded_reduce(3, 2, 1), limit=1, samples=5, search=False, **kw),
}


def test_every_random_function_takes_rng_with_default_none():
    for name in RANDOM:
        params = inspect.signature(getattr(gc, name)).parameters
        assert "rng" in params and params["rng"].default is None, name


@pytest.mark.parametrize("name", list(RANDOM))
def test_rng_forms(name):
    call = RANDOM[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        call(rng=None)
        call(rng=3)
        call(rng=np.random.SeedSequence(3))
        call(rng=np.random.default_rng(3))
    with pytest.raises(ValueError, match="non-negative integer seed"):
        call(rng=-1)
    with pytest.raises(TypeError, match="rng must be"):
        call(rng="x")


def test_same_seed_same_code_and_seedsequence():
    a = gc.cyclic_repetition(8, 3, rng=5).B
    np.testing.assert_array_equal(a, gc.cyclic_repetition(8, 3, rng=5).B)
    np.testing.assert_array_equal(gc.cyclic_repetition(8, 3, rng=np.random.SeedSequence(5)).B,
                                  gc.cyclic_repetition(8, 3, rng=np.random.SeedSequence(5)).B)


def test_graph_degree_has_one_name():
    assert "degree" in inspect.signature(gc.random_regular_graph).parameters
    np.testing.assert_array_equal(gc.random_regular_graph(10, degree=3, rng=0), gc.random_regular_graph(10, 3, rng=0))


def test_int_rng_is_saved_and_rebuilt(tmp_path):
    code = gc.expander_code(10, 3, rng=4)
    assert code.params["rng"] == 4
    gc.save_code(code, tmp_path / "e.npz")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        back = gc.load_code(tmp_path / "e.npz")
    assert back.default_decoder == "optimal" and np.array_equal(back.B, code.B)


# gradcodes.mpi's random models (importing gradcodes.mpi does not import mpi4py)
MPI_RANDOM = {
    "ShiftedExponential": lambda **kw: _draws(ShiftedExponential(1e-3, m_data=100, **kw)),
    "FixedDelay": lambda **kw: _draws(FixedDelay(0.5, count=2, **kw)),
    "SyntheticProblem": lambda **kw: SyntheticProblem(points=12, dim=3, **kw).X,
    "predict": lambda **kw: predict(gc.cyclic_repetition(6, 2, rng=0), ShiftedExponential(1e-3, m_data=600, rng=0),
                                    workers=6, need=4, iters=200, **kw),
}


def _draws(model):
    return [model.delay(w, t, workers=6, load_fraction=0.5) for w in range(6) for t in range(3)]


@pytest.mark.parametrize("name", list(MPI_RANDOM))
def test_mpi_models_take_rng(name):
    call = MPI_RANDOM[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        first = call(rng=3)
        np.testing.assert_array_equal(first, call(rng=3))                       # an int reproduces
        np.testing.assert_array_equal(call(rng=np.random.SeedSequence(3)), call(rng=np.random.SeedSequence(3)))
        call(rng=np.random.default_rng(3))
        call(rng=None)
    with pytest.raises(ValueError, match="non-negative integer seed"):
        call(rng=-1)
    with pytest.raises(TypeError, match="rng must be"):
        call(rng="x")


def test_delay_draws_with_an_int_are_keyed_by_the_int():
    """``rng=s`` keys each draw by ``(s, worker, iteration)``, so recorded experiments reproduce."""
    d = ShiftedExponential(1e-3, m_data=100, rng=4)
    expected = 1e-3 * 50 + np.random.default_rng([4, 1, 2, 7]).exponential(50 / 1e3)
    assert d.delay(2, 7, workers=4, load_fraction=0.5) == expected
    late = FixedDelay(1.0, count=3, rng=9).stragglers(11, 8)
    assert late == frozenset(int(w) for w in np.random.default_rng([9, 2, 11]).choice(8, 3, replace=False))
    fresh = [ShiftedExponential(1e-3, m_data=100).entropy for _ in range(3)]
    assert len(set(fresh)) == 3 and all(e >= 0 for e in fresh)                # None: fresh entropy each time


def test_every_registered_builder_defaults_to_seed_0():
    """The command line's ``--seed`` is the builders' ``seed`` (passed on as ``rng``); without it every scheme builds
    with seed 0, so ``gradcodes build`` is reproducible (Python's ``rng=None`` draws fresh entropy)."""
    from gradcodes._base.registry import schemes

    for name, scheme in schemes().items():
        params = inspect.signature(scheme.build).parameters
        assert "rng" not in params, name                      # one name on the command line: --seed
        if "seed" in params:
            assert params["seed"].default == 0, name


@pytest.mark.parametrize(("argv", "python"), [
    (["ye_abbe", "-n", "6", "-s", "1", "-m", "2", "--param", "nodes=random"],
     lambda rng: gc.ye_abbe(6, 1, 2, nodes="random", rng=rng)),
    (["coded_reduce", "-n", "12", "--param", "L=2", "-s", "1", "--param", "field=rational"],
     lambda rng: gc.coded_reduce(3, 2, 1, field="rational", rng=rng)),
    (["cyclic_repetition", "-n", "7", "-s", "2"], lambda rng: gc.cyclic_repetition(7, 2, rng=rng)),
])
def test_cli_build_without_seed_is_reproducible(tmp_path, argv, python):
    from gradcodes.cli import main

    paths = [tmp_path / f"{i}.npz" for i in range(2)]
    for path in paths:
        assert main(["build", *argv, "-o", str(path)]) == 0
    first, second = (gc.load_code(p) for p in paths)
    np.testing.assert_array_equal(first.B, second.B)
    np.testing.assert_array_equal(first.B, python(0).B)               # the registered seed is 0
    assert main(["build", *argv, "--seed", "3", "-o", str(paths[0])]) == 0
    np.testing.assert_array_equal(gc.load_code(paths[0]).B, python(3).B)


def test_mpi_code_seed_reaches_every_scheme():
    import argparse

    from gradcodes.mpi._cli import build_code

    opts = dict(n=7, branching=None, s=2, L=None, m=None, k=None, degree=None)
    for seed in (0, 5):
        code = build_code(argparse.Namespace(scheme="cyclic_repetition", code_seed=seed, **opts))
        np.testing.assert_array_equal(code.B, gc.cyclic_repetition(7, 2, rng=seed).B)
    tree = build_code(argparse.Namespace(scheme="coded_reduce", code_seed=4,
                                         **{**opts, "n": None, "branching": 3, "L": 2, "s": 1}))
    assert tree == gc.coded_reduce(3, 2, 1, rng=4)
