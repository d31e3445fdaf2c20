"""Contract with the real sglang-kt 0.7.2 wheel: every flag and choice the builder can emit exists there,
read from `sglang/srt/server_args.py` with `ast` (never imported)."""

import pytest

from launch.settings import KT_METHODS, setting_fields
from launch.sglang_flags import SGLANG_FLAGS
from tests.server_args_ast import read_kt_methods, read_server_args
from tests.wheel_cache import fetch_wheel, unpack

pytestmark = pytest.mark.wheel

# How our kinds map onto argparse's: the type= names sglang uses for each.
COMPATIBLE_TYPES = {
    "int": {"int"},
    "float": {"float"},
    "str": {"str", "nullable_str"},
    "path": {"str", "nullable_str"},
    "secret": {"str", "nullable_str"},
    "int_list": {"int"},
}


@pytest.fixture(scope="module")
def server_args():
    root = unpack(fetch_wheel("sglang-kt", "0.7.2"), "sglang/srt/server_args.py", "sglang/srt/parser/",
                  "sglang/srt/function_call/")
    return read_server_args(root / "sglang" / "srt")


@pytest.fixture(scope="module")
def kt_methods():
    root = unpack(fetch_wheel("kt-kernel", "0.7.2"), "kt_kernel/experts.py")
    return read_kt_methods(root / "kt_kernel")


def test_every_field_is_a_real_flag_with_a_compatible_type(server_args):
    for fld in setting_fields():
        info = server_args.get(fld.spec.flag)
        assert info is not None, f"{fld.spec.flag} is not a flag of sglang-kt 0.7.2"
        if fld.spec.kind == "bool":
            assert info.action == "store_true", fld.spec.flag
        else:
            assert info.type_name in COMPATIBLE_TYPES[fld.spec.kind], (fld.spec.flag, info.type_name)
            assert info.action is None
        assert (info.nargs == "+") == (fld.spec.kind == "int_list"), fld.spec.flag


def test_every_choice_we_offer_is_accepted_by_the_engine(server_args):
    for fld in setting_fields():
        theirs = server_args[fld.spec.flag].choices
        if fld.spec.choices and theirs is not None:
            assert set(fld.spec.choices) <= set(theirs), (fld.spec.flag, set(fld.spec.choices) - set(theirs))
        if theirs is not None:
            assert fld.spec.choices, f"{fld.spec.flag} has argparse choices we do not check"


def test_kt_methods_are_kt_kernels_inference_methods(kt_methods):
    assert set(KT_METHODS) == kt_methods


def test_known_flag_list_equals_the_wheels(server_args):
    assert frozenset(server_args) == SGLANG_FLAGS
