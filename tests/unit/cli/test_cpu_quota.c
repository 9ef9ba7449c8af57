/* test_cpu_quota.c — the CPU quota a cgroup sets, read from fake cgroup v2 and v1 trees written
 * in a temporary directory as the kernel lays them out. */
#define _GNU_SOURCE /* mkdtemp */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cpu_quota.h"

static char root[64];

static void put(const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    /* make each parent directory of the file */
    for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')) != NULL; p++) {
        *p = 0;
        mkdir(path, 0700);
        *p = '/';
    }
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof root, "/tmp/fathom-cgroup-XXXXXX");
    return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

/* ⌈quota/period⌉: 150,000 µs per 100,000 µs is 1.5 CPUs, so 2 threads; 50,000 is half a CPU,
 * still 1 thread; -1 (v1's "none") and a zero period are no quota. */
static void test_whole_cpus(void **state)
{
    (void)state;
    assert_int_equal(cpu_quota_whole_cpus(200000, 100000), 2);
    assert_int_equal(cpu_quota_whole_cpus(150000, 100000), 2);
    assert_int_equal(cpu_quota_whole_cpus(50000, 100000), 1);
    assert_int_equal(cpu_quota_whole_cpus(-1, 100000), 0);
    assert_int_equal(cpu_quota_whole_cpus(100000, 0), 0);
}

/* cgroup v2: the pod's cpu.max "400000 100000" (4 CPUs) above the container's "max": 4; a
 * container limit of 1.5 CPUs under it: 2, the smaller holds. */
static void test_v2_smallest_on_path(void **state)
{
    (void)state;
    put("kubepods/pod1/cpu.max", "400000 100000\n");
    put("kubepods/pod1/ctr/cpu.max", "max 100000\n");
    assert_int_equal(cpu_quota_cpus("0::/kubepods/pod1/ctr\n", root), 4);
    put("kubepods/pod1/ctr/cpu.max", "150000 100000\n");
    assert_int_equal(cpu_quota_cpus("0::/kubepods/pod1/ctr\n", root), 2);
}

/* A cgroup namespace shows "0::/": the mount's root is the container's cgroup. No file, or
 * "max", is no quota. */
static void test_v2_namespace_root(void **state)
{
    (void)state;
    assert_int_equal(cpu_quota_cpus("0::/\n", root), 0);
    put("cpu.max", "max 100000\n");
    assert_int_equal(cpu_quota_cpus("0::/\n", root), 0);
    put("cpu.max", "300000 100000\n");
    assert_int_equal(cpu_quota_cpus("0::/\n", root), 3);
}

/* cgroup v1: the cpu controller's directory is named by its controller list; a path the mount
 * does not have (the host's, seen from a container) walks up to the mount's root. Lines of
 * other controllers are not read. */
static void test_v1(void **state)
{
    (void)state;
    put("cpu,cpuacct/cpu.cfs_quota_us", "250000\n");
    put("cpu,cpuacct/cpu.cfs_period_us", "100000\n");
    put("memory/cpu.cfs_quota_us", "100000\n");
    put("memory/cpu.cfs_period_us", "100000\n");
    const char *text = "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/\n";
    assert_int_equal(cpu_quota_cpus(text, root), 3);
    put("cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
    assert_int_equal(cpu_quota_cpus(text, root), 0);
    assert_int_equal(cpu_quota_cpus("", root), 0);
    assert_int_equal(cpu_quota_cpus("garbage without colons", root), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_cpus),
        cmocka_unit_test_setup_teardown(test_v2_smallest_on_path, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2_namespace_root, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v1, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
