"""services.pause: the one interruptible wait, with a sleep that returns at once (as tests' do)."""

from __future__ import annotations

from rocmbuild.services import Services, pause


def test_pause_sleeps_the_whole_time_in_chunks() -> None:
    slept: list[float] = []
    waited = pause(1.2, sleep=slept.append, interrupted=lambda: False)
    assert slept[:2] == [0.5, 0.5] and abs(slept[2] - 0.2) < 1e-9 and abs(waited - 1.2) < 1e-9


def test_pause_stops_when_interrupted() -> None:
    slept: list[float] = []
    waited = pause(10, sleep=slept.append, interrupted=lambda: len(slept) >= 2)
    assert slept == [0.5, 0.5] and waited == 1.0
    assert pause(0, sleep=slept.append, interrupted=lambda: False) == 0.0 and len(slept) == 2


def test_each_services_has_its_own_probe_cache() -> None:
    a, b = Services(), Services()
    assert a.probes is not b.probes and a.probes.versions == {} and a.probes.probes == {}
