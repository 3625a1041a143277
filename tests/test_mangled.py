"""The outermost scope of an Itanium-mangled C++ name: what a loader's missing symbol says about its library."""

from __future__ import annotations

import pytest

from rocmbuild.diagnosis.mangled import outer_scope


@pytest.mark.parametrize(("symbol", "scope"), [
    ("_ZN6OpenMM7Context12reinitializeEv", "OpenMM"),                     # a function of a class in a namespace
    ("_ZNK10tensorflow6Device19IsRemoteCallAllowedEv", "tensorflow"),      # const member function
    ("_ZNSt15__exception_ptr13exception_ptr9_M_addrefEv", "std"),          # std:: abbreviated as St
    ("_ZNSs4_Rep10_M_destroyERKSaIcE", "std"),                             # std::string abbreviated as Ss
    ("_ZTIN3c1010TensorImplE", "c10"),                                     # typeinfo of a nested class
    ("_ZTVN5boost6system14error_categoryE", "boost"),                      # vtable
    ("_ZNKR4absl6StatusC1Ev", "absl"),                                     # const & ref-qualified
    ("_ZNVK3foo3barEv", "foo"),                                            # volatile const
    ("_ZNKO4absl1fEv", "absl"),                                            # const && ref-qualified
    ("_ZTSN5boost6system14error_categoryE", "boost"),                      # type name
    ("_ZSt4cout", "std"),                                                  # std's own unscoped name
    ("_ZTISt9exception", "std"),                                           # typeinfo of one
])
def test_nested_names_give_their_outer_scope(symbol: str, scope: str) -> None:
    assert outer_scope(symbol) == scope


@pytest.mark.parametrize("symbol", [
    "_Z28silu_and_mul_per_block_quantRN2at6TensorE",  # a free function: no scope to compare
    "hipSetDevice",                                   # C linkage
    "_ZN99short",                                     # a length longer than what follows: not a name
    "_ZN3",                                           # cut
    "_ZTI9MyWidget",                                  # a class at global scope
    "_ZN12_GLOBAL__N_16helperEv",                     # an anonymous namespace: always the library's own
    "_ZN01aE",                                        # a length with a leading zero is not a mangling
    "_ZZ4mainE1x",                                    # a local name
])
def test_names_without_a_nested_scope_give_none(symbol: str) -> None:
    assert outer_scope(symbol) is None
