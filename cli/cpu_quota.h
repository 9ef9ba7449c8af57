/* cpu_quota.h — the CPUs a cgroup's CPU quota gives this process, for the CLI's default
 * thread count. */
#ifndef FATHOM_CPU_QUOTA_H
#define FATHOM_CPU_QUOTA_H

/* Whole CPUs a quota of `quota` µs per `period` µs allows: ⌈quota / period⌉, at least 1;
 * 0 when there is no quota (quota ≤ 0: cgroup v1's -1, v2's "max") or the period is not
 * positive. */
int cpu_quota_whole_cpus(long long quota, long long period);

/* The smallest quota, in whole CPUs, on the cgroup path of each controller line of
 * `proc_self_cgroup` (the text of /proc/self/cgroup) and every ancestor of that path, read
 * under `root` (/sys/fs/cgroup): cgroup v2's <path>/cpu.max ("QUOTA PERIOD" or "max PERIOD"),
 * cgroup v1's cpu controller directory's cpu.cfs_quota_us and cpu.cfs_period_us. 0 when no
 * quota is set or none can be read. */
int cpu_quota_cpus(const char *proc_self_cgroup, const char *root);

/* cpu_quota_cpus of this process under /sys/fs/cgroup. */
int cpu_quota_of_process(void);

#endif
