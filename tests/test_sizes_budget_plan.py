"""Sizes, budgets and plans without an engine: parse_size / format_bytes, cgroup
v1 and v2 headroom read from fake /proc and /sys trees (walking up parents,
container mount roots, hybrid mounts, garbage files), overrides and their
precedence, the device reserve, and MemoryPlan's table, HTML and error."""

import numpy as np
import pytest

from boundfit.runtime import budget
from boundfit.errors import BoundfitError, MemoryBudgetError
from boundfit.engine.plan import MemoryPlan, PlanEntry, budget_error, budget_message, format_budget_message, \
    raise_budget_error
from boundfit.sizes import format_bytes, parse_size

MiB, GiB = 1 << 20, 1 << 30
V1_UNLIMITED = "9223372036854771712"


# ---- sizes -----------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("512MiB", 512 * MiB), ("4GB", 4 * 10**9), ("1.5 GiB", 3 * GiB // 2), (1024, 1024), ("1e9", 10**9),
    ("4g", 4 * GiB), ("4G", 4 * GiB), ("2Ki", 2048), ("10 kb", 10_000), ("100", 100), ("100B", 100),
    (" 7 mib ", 7 * MiB), ("1_000", 1000), (2.9, 2), (np.int64(7), 7), (np.float32(2.0), 2), ("0", 0),
    ("9223372036854775807", 2**63 - 1), ("1TiB", 2**40), ("2T", 2**41), ("3 PB", 3 * 10**15),
])
def test_parse_size_reads_numbers_and_units(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["", "abc", "12 parsecs", "-1", "-5MiB", "1e", ".", "nan", "inf", "1.2.3",
                                 "GiB", "4 GiB extra", -1, float("nan"), float("inf")])
def test_parse_size_rejects_garbage_and_negatives_naming_the_argument(bad):
    with pytest.raises(ValueError, match="memory_limit"):
        parse_size(bad, "memory_limit")


@pytest.mark.parametrize("bad", [None, True, [1], b"1GiB"])
def test_parse_size_rejects_other_types(bad):
    with pytest.raises(TypeError, match="host"):
        parse_size(bad, "host")


@pytest.mark.parametrize("n, text", [(0, "0 B"), (1023, "1023 B"), (1024, "1.00 KiB"), (10**10, "9.31 GiB"),
                                     (int(7.8 * GiB), "7.80 GiB"), (512 * MiB, "512.00 MiB"),
                                     (3 * 2**39, "1.50 TiB"), (-2 * MiB, "-2.00 MiB")])
def test_format_bytes(n, text):
    assert format_bytes(n) == text


def test_format_then_parse_round_trips_within_rounding():
    for n in (1, 999, 5000, 123 * MiB + 17, 9 * GiB + 12345):
        assert abs(parse_size(format_bytes(n)) - n) <= n * 0.005 + 1


# ---- fake /proc and /sys trees ---------------------------------------------

def tree(tmp, files):
    for rel, text in files.items():
        p = tmp / rel.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return str(tmp)


def mountinfo(*mounts):
    """(fstype, mount root, mount point, super options) -> /proc/self/mountinfo lines."""
    return "".join(f"{30 + i} 23 0:{28 + i} {root} {point} rw,nosuid - {fs} {fs} {opts}\n"
                   for i, (fs, root, point, opts) in enumerate(mounts))


V1_MOUNTS = mountinfo(("tmpfs", "/", "/sys/fs/cgroup", "rw"), ("cgroup", "/", "/sys/fs/cgroup/cpu", "rw,cpu"),
                      ("cgroup", "/", "/sys/fs/cgroup/memory", "rw,memory"))


def v1_group(d, limit, usage, inactive=0):
    return {f"{d}/memory.limit_in_bytes": str(limit), f"{d}/memory.usage_in_bytes": str(usage),
            f"{d}/memory.stat": f"cache 0\ninactive_file 1\ntotal_inactive_file {inactive}\n"}


def v2_group(d, mx, current, high="max", inactive=0):
    return {f"{d}/memory.max": mx, f"{d}/memory.current": str(current), f"{d}/memory.high": high,
            f"{d}/memory.stat": f"anon 5\ninactive_file {inactive}\n"}


MEMINFO = "MemTotal:       16000000 kB\nMemFree:         1000000 kB\nMemAvailable:    8388608 kB\n"


@pytest.fixture
def v1_root(tmp_path):
    m = "/sys/fs/cgroup/memory"
    return tree(tmp_path, {"/proc/self/mountinfo": V1_MOUNTS, "/proc/meminfo": MEMINFO,
                           "/proc/self/cgroup": "5:cpu:/\n4:memory:/a/b\n0::/\n",
                           **v1_group(m, V1_UNLIMITED, 5 * GiB),
                           **v1_group(f"{m}/a", 800 * MiB, 700 * MiB),
                           **v1_group(f"{m}/a/b", GiB, 600 * MiB, inactive=100 * MiB)})


@pytest.fixture(autouse=True)
def _no_overrides(monkeypatch):
    monkeypatch.delenv("BOUNDFIT_MEMORY_LIMIT", raising=False)
    monkeypatch.delenv("BOUNDFIT_DEVICE_MEMORY_LIMIT", raising=False)
    monkeypatch.setattr(budget, "_limits", {"host": None, "device": None})


def test_v1_headroom_is_the_tightest_of_the_group_and_its_parents(v1_root):
    lims = budget.cgroup_limits(v1_root)
    assert [r.path.rsplit("memory", 1)[1] for r in lims] == ["/a", "/a/b"]      # root is unlimited
    b = lims[1]
    assert (b.version, b.limit, b.usage, b.working_set, b.headroom) == (1, GiB, 600 * MiB, 500 * MiB, 524 * MiB)
    room, desc = budget.cgroup_headroom(v1_root)
    assert room == 100 * MiB and "cgroup v1" in desc and desc.split()[2].endswith("/a")
    assert budget.cgroup_usage(v1_root) == lims[0]


def test_v1_mount_root_of_a_container_maps_to_the_mount_point(tmp_path):
    root = tree(tmp_path, {
        "/proc/self/mountinfo": mountinfo(("cgroup", "/docker/abc", "/sys/fs/cgroup/memory", "rw,memory")),
        "/proc/self/cgroup": "4:memory:/docker/abc\n",
        **v1_group("/sys/fs/cgroup/memory", 512 * MiB, 112 * MiB)})
    assert budget.cgroup_headroom(root)[0] == 400 * MiB


def test_a_path_outside_every_mount_root_reads_the_mount_point(tmp_path):
    root = tree(tmp_path, {
        "/proc/self/mountinfo": mountinfo(("cgroup", "/kubepods/pod1", "/sys/fs/cgroup/memory", "rw,memory")),
        "/proc/self/cgroup": "4:memory:/\n",
        **v1_group("/sys/fs/cgroup/memory", 512 * MiB, 12 * MiB)})
    assert budget.cgroup_headroom(root)[0] == 500 * MiB


def test_mount_points_with_spaces_are_unescaped(tmp_path):
    root = tree(tmp_path, {
        "/proc/self/mountinfo": mountinfo(("cgroup", "/", "/cg\\040mem", "rw,memory")),
        "/proc/self/cgroup": "4:memory:/x\n", **v1_group("/cg mem/x", 300 * MiB, 100 * MiB)})
    assert budget.cgroup_headroom(root)[0] == 200 * MiB


def test_v2_reads_max_high_and_current_walking_up_parents(tmp_path):
    m = "/sys/fs/cgroup"
    root = tree(tmp_path, {"/proc/self/mountinfo": mountinfo(("cgroup2", "/", m, "rw,nsdelegate")),
                           "/proc/self/cgroup": "0::/user.slice/app.scope\n", "/proc/meminfo": MEMINFO,
                           **v2_group(f"{m}/user.slice", "2147483648", GiB + 512 * MiB),
                           **v2_group(f"{m}/user.slice/app.scope", "max", 300 * MiB, inactive=50 * MiB)})
    assert budget.cgroup_headroom(root)[0] == 512 * MiB
    # memory.high below memory.max counts as the limit (past it the kernel throttles and reclaims)
    (tmp_path / "sys/fs/cgroup/user.slice/app.scope/memory.high").write_text(str(400 * MiB))
    r = budget.cgroup_usage(root)
    assert (r.version, r.limit, r.working_set, r.headroom) == (2, 400 * MiB, 250 * MiB, 150 * MiB)
    assert budget.host_budget(root=root)[0] == 150 * MiB - 64 * MiB


def test_hybrid_mounts_use_v1_memory_when_v2_has_no_memory_files(tmp_path):
    root = tree(tmp_path, {
        "/proc/self/mountinfo": V1_MOUNTS + mountinfo(("cgroup2", "/", "/sys/fs/cgroup/unified", "rw")),
        "/proc/self/cgroup": "4:memory:/job\n0::/\n", "/sys/fs/cgroup/unified/cgroup.procs": "1\n",
        **v1_group("/sys/fs/cgroup/memory/job", 256 * MiB, 56 * MiB)})
    assert [v for v, _ in budget.cgroup_dirs(root)] == [1, 2]
    assert budget.cgroup_headroom(root)[0] == 200 * MiB


def test_host_budget_is_the_smaller_of_cgroup_and_memavailable_less_the_margin(v1_root, tmp_path):
    host, src = budget.host_budget(root=v1_root)
    assert host == 100 * MiB - 64 * MiB and "margin" in src and "cgroup" in src
    (tmp_path / "sys/fs/cgroup/memory/a/memory.limit_in_bytes").write_text(V1_UNLIMITED)
    (tmp_path / "sys/fs/cgroup/memory/a/b/memory.limit_in_bytes").write_text(str(100 * GiB))
    host, src = budget.host_budget(root=v1_root)
    assert host == 8 * GiB - 8 * GiB // 20 and src.startswith("MemAvailable")


def test_margin_is_64_mib_or_five_percent():
    assert budget.margin(100 * MiB) == 64 * MiB and budget.margin(10 * GiB) == GiB // 2


def test_no_cgroups_fall_back_to_memavailable_and_nothing_at_all_to_a_stated_guess(tmp_path):
    root = tree(tmp_path, {"/proc/meminfo": MEMINFO})
    assert budget.cgroup_headroom(root) == (None, None)
    assert budget.host_budget(root=root)[0] == 8 * GiB - 8 * GiB // 20
    empty = tree(tmp_path / "empty", {})
    assert budget.host_budget(root=empty) == (GiB, "no memory information found; assuming 1 GiB")
    assert budget.raw_headroom(empty) is None and budget.process_usage_bytes(empty) is None


def test_garbage_and_unreadable_files_never_raise(tmp_path):
    m = "/sys/fs/cgroup/memory/g"
    root = tree(tmp_path, {"/proc/self/mountinfo": V1_MOUNTS + "short line\n - \n\x00\xff",
                           "/proc/self/cgroup": "garbage\n4:memory:/g\n::\n", "/proc/meminfo": "MemAvailable: x kB\n",
                           f"{m}/memory.limit_in_bytes": "lots", f"{m}/memory.usage_in_bytes": "12",
                           "/proc/self/status": "VmRSS: ?\n"})
    (tmp_path / "sys/fs/cgroup/memory/g/memory.stat").mkdir()            # a directory where a file should be
    assert budget.cgroup_limits(root) == []
    assert budget.host_budget(root=root)[0] == GiB
    assert budget.process_usage_bytes(root) is None


def test_process_rss_and_peak_from_status(tmp_path):
    root = tree(tmp_path, {"/proc/self/status": "Name:\tpython\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\n"})
    assert budget.process_usage_bytes(root) == 100 * MiB and budget.peak_rss_bytes(root) == 200 * MiB
    assert 0 < budget.process_usage_bytes() <= budget.peak_rss_bytes()        # this process, for real


def test_real_host_budget_is_positive_and_below_what_the_machine_has():
    host, src = budget.host_budget()
    assert 0 <= host <= budget.raw_headroom() and src


def test_overrides_precedence_call_then_set_memory_limit_then_environment(v1_root, monkeypatch):
    monkeypatch.setenv("BOUNDFIT_MEMORY_LIMIT", "30MiB")
    assert budget.host_budget(root=v1_root) == (30 * MiB, "BOUNDFIT_MEMORY_LIMIT=30MiB")
    assert budget.set_memory_limit(host="20MiB") == {"host": 20 * MiB, "device": None}
    assert budget.host_budget(root=v1_root)[0] == 20 * MiB
    assert budget.host_budget("10MiB", root=v1_root) == (10 * MiB, "memory_limit='10MiB'")
    assert budget.host_budget("auto", root=v1_root)[0] == 20 * MiB
    budget.set_memory_limit(host="auto")
    monkeypatch.setenv("BOUNDFIT_MEMORY_LIMIT", "auto")
    assert budget.host_budget(root=v1_root)[0] == 100 * MiB - 64 * MiB


def test_host_override_is_capped_at_what_is_really_left(v1_root):
    host, src = budget.host_budget("4GiB", root=v1_root)
    assert host == 100 * MiB and "capped" in src


def test_set_memory_limit_validates_before_changing_anything():
    budget.set_memory_limit(host="1GiB")
    with pytest.raises(ValueError, match="device"):
        budget.set_memory_limit(host="2GiB", device="lots")
    assert budget.set_memory_limit() == {"host": GiB, "device": None}
    assert budget.set_memory_limit(device=123) == {"host": GiB, "device": 123}


def test_bad_environment_variable_raises_naming_it(monkeypatch):
    monkeypatch.setenv("BOUNDFIT_DEVICE_MEMORY_LIMIT", "plenty")
    with pytest.raises(ValueError, match="BOUNDFIT_DEVICE_MEMORY_LIMIT"):
        budget.device_budget(GiB)


def test_device_budget_keeps_a_reserve_and_caps_overrides_at_free(monkeypatch):
    assert budget.device_budget(GiB)[0] == GiB - 256 * MiB
    assert budget.device_budget(80 * GiB)[0] == 80 * GiB - 4 * GiB
    assert budget.device_budget(100 * MiB)[0] == 0
    assert budget.device_budget(GiB, "2GiB") == (GiB, "memory_limit='2GiB', capped at the 1.00 GiB free")
    monkeypatch.setenv("BOUNDFIT_DEVICE_MEMORY_LIMIT", "300MiB")
    assert budget.device_budget(GiB) == (300 * MiB, "BOUNDFIT_DEVICE_MEMORY_LIMIT=300MiB")
    budget.set_memory_limit(device="200MiB")
    assert budget.device_budget(GiB)[0] == 200 * MiB and budget.device_budget(GiB, "8MiB")[0] == 8 * MiB


# ---- MemoryPlan ------------------------------------------------------------

def gpu_plan(max_batch_size=1536):
    return MemoryPlan([PlanEntry("parameters", 5 * MiB, "host", "params"),
                       PlanEntry("activations <conv1>", 10**10 - 5 * MiB, "cuda:0", "activations", "live at the peak"),
                       ("weights", 5 * MiB, "cuda:0", "params")],
                      budget_host_bytes=GiB, budget_device_bytes=int(7.8 * GiB), max_batch_size=max_batch_size,
                      batch_size=2048, device="cuda:0", budget_host_source="MemAvailable",
                      budget_device_source="free less a reserve")


def test_plan_totals_and_verdict_come_from_the_entries():
    p = gpu_plan()
    assert (p.host_bytes, p.device_bytes) == (5 * MiB, 10**10)
    assert not p.fits and p.host_fits and not p.device_fits
    assert p.shortfall() == ("cuda:0", 10**10, int(7.8 * GiB))
    cpu = MemoryPlan([PlanEntry("parameters", MiB), {"name": "batch", "bytes": MiB, "category": "inputs"}],
                     budget_host_bytes=2 * MiB, max_batch_size=64, batch_size=32)
    assert cpu.fits and cpu.shortfall() is None and cpu.host_bytes == 2 * MiB
    assert [w for w, *_ in cpu.locations()] == ["host"]


def test_budget_error_message_says_needed_available_and_what_fits():
    p = gpu_plan()
    msg = "needs 9.31 GiB on cuda:0, 7.80 GiB available; batch_size <= 1536 fits, or micro_batch='auto'"
    assert budget_message(p) == msg
    e = budget_error(p)
    assert isinstance(e, MemoryBudgetError) and isinstance(e, MemoryError) and isinstance(e, BoundfitError)
    assert (str(e), e.plan, e.needed_bytes, e.available_bytes, e.where, e.max_batch_size) == \
        (msg, p, 10**10, int(7.8 * GiB), "cuda:0", 1536)
    with pytest.raises(MemoryBudgetError, match="batch_size <= 1536"):
        raise_budget_error(p)
    with pytest.raises(ValueError):
        budget_error(MemoryPlan([], GiB))


def test_budget_message_when_nothing_fits_or_the_largest_batch_is_unknown():
    assert "even batch_size=1 does not fit" in format_budget_message(2 * GiB, GiB, "host", 0)
    assert format_budget_message(2 * GiB, GiB, "host", None).endswith("micro_batch='auto' keeps the batch size "
                                                                      "in less memory")
    both = MemoryPlan([("a", 2 * GiB), ("b", 2 * GiB, "cuda:0")], GiB, GiB, max_batch_size=8, device="cuda:0")
    assert budget_message(both).startswith("needs 2.00 GiB on cuda:0") and "also needs 2.00 GiB on host" in \
        budget_message(both)


def test_plan_str_is_a_table_with_totals_budget_verdict_and_largest_batch():
    s = str(gpu_plan())
    assert "batch_size=2048" in s and "device=cuda:0" in s
    assert "activations <conv1>" in s and "live at the peak" in s and "5.00 MiB" in s
    assert "cuda:0 total" in s and "9.31 GiB" in s and "budget 7.80 GiB" in s and "free less a reserve" in s
    assert "host total" in s and "budget 1.00 GiB" in s
    assert "fits: NO, short by 1.51 GiB on cuda:0" in s
    assert "largest batch size that fits: 1536" in s
    ok = str(MemoryPlan([PlanEntry("parameters", MiB)], GiB, max_batch_size=0))
    assert "fits: yes" in ok and "cuda" not in ok and "none (even batch_size=1 does not fit)" in ok
    assert "fits=False" in repr(gpu_plan())


def test_plan_html_has_a_row_per_entry_escaped_and_red_or_green_bars():
    h = gpu_plan()._repr_html_()
    assert h.count("<tr>") == 1 + 3 and "activations &lt;conv1&gt;" in h and "<conv1>" not in h
    assert "#c62828" in h and "does not fit, short by 1.51 GiB" in h and "batch_size &lt;= 1536" in h
    g = MemoryPlan([PlanEntry("parameters", MiB)], GiB, max_batch_size=4)._repr_html_()
    assert "#2e7d32" in g and "#c62828" not in g and ">fits<" in g and "width:0px" in g


def test_anonymous_rss_leaves_out_mapped_file_pages_and_falls_back_to_vmrss(tmp_path):
    status = "VmRSS:\t  307200 kB\nRssAnon:\t  102400 kB\nRssFile:\t  204800 kB\n"
    assert budget.anon_rss_bytes(tree(tmp_path / "a", {"/proc/self/status": status})) == 100 * MiB
    assert budget.anon_rss_bytes(tree(tmp_path / "b", {"/proc/self/status": "VmRSS:\t  1024 kB\n"})) == MiB
    assert 0 < budget.anon_rss_bytes() <= budget.process_usage_bytes()        # this process, for real
