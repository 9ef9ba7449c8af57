/* cpu_quota.c — the CPU limit a container runtime sets through the cgroup CPU controller
 * (Kubernetes' resources.limits.cpu, docker run --cpus), read so the CLI does not start more
 * threads than the quota lets run: a limit leaves the affinity mask whole, and threads beyond
 * it are throttled each period rather than run.
 *
 * The files are the kernel's (Documentation/admin-guide/cgroup-v2.rst, "cpu.max": "$MAX
 * $PERIOD", "max" for none; cgroup-v1/cfs: cpu.cfs_quota_us, -1 for none, over
 * cpu.cfs_period_us). A quota on an ancestor limits the child too, so the smallest on the path
 * holds. Inside a container the path /proc/self/cgroup names may not exist under the
 * container's own /sys/fs/cgroup (a cgroup namespace shows "/", a v1 bind mount shows the
 * host's path): the walk up the path then reaches the mount's root, which is the container's
 * cgroup. */
#include "cpu_quota.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cpu_quota_whole_cpus(long long quota, long long period)
{
    if (quota <= 0 || period <= 0)
        return 0;
    const long long n = (quota + period - 1) / period;
    return n > 1 << 20 ? 1 << 20 : (int)n;
}

/* The first line of a small file, or 0 when it cannot be read. */
static int read_line(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    const int ok = fgets(buf, (int)size, f) != NULL;
    fclose(f);
    return ok;
}

/* The quota set in one cgroup directory, in whole CPUs (0: none or unreadable). */
static int quota_in(const char *dir, int v2)
{
    char path[4096], text[128], text2[128];
    long long quota = 0, period = 0;
    if (v2) {
        char max[32];
        snprintf(path, sizeof path, "%s/cpu.max", dir);
        if (!read_line(path, text, sizeof text) ||
            sscanf(text, "%31s %lld", max, &period) != 2 || strcmp(max, "max") == 0)
            return 0;
        char *end;
        quota = strtoll(max, &end, 10);
        return *end ? 0 : cpu_quota_whole_cpus(quota, period);
    }
    snprintf(path, sizeof path, "%s/cpu.cfs_quota_us", dir);
    if (!read_line(path, text, sizeof text) || sscanf(text, "%lld", &quota) != 1)
        return 0;
    snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dir);
    if (!read_line(path, text2, sizeof text2) || sscanf(text2, "%lld", &period) != 1)
        return 0;
    return cpu_quota_whole_cpus(quota, period);
}

/* The smallest quota on `dir` and each of its ancestors down to `top` (a prefix of dir). */
static int smallest_on_path(char *dir, size_t top, int v2)
{
    int best = 0;
    for (;;) {
        const int q = quota_in(dir, v2);
        if (q > 0 && (best == 0 || q < best))
            best = q;
        char *slash = strrchr(dir + top, '/');
        if (!slash)
            return best;
        *slash = 0;
    }
}

/* Whether a v1 line's controller list ("cpu,cpuacct") names the cpu controller. */
static int names_cpu(const char *list, size_t n)
{
    for (const char *p = list; p < list + n;) {
        const size_t len = strcspn(p, ",:");
        if (len == 3 && strncmp(p, "cpu", 3) == 0)
            return 1;
        p += len + 1;
    }
    return 0;
}

int cpu_quota_cpus(const char *proc_self_cgroup, const char *root)
{
    int best = 0;
    for (const char *line = proc_self_cgroup; line && *line;) {
        const char *eol = strchr(line, '\n');
        const size_t len = eol ? (size_t)(eol - line) : strlen(line);
        /* "ID:CONTROLLERS:PATH"; v2's unified line is "0::PATH" */
        const char *c1 = memchr(line, ':', len);
        const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
        if (c2) {
            const int v2 = c2 == c1 + 1;
            char dir[4096];
            int n = -1;
            if (v2)
                n = snprintf(dir, sizeof dir, "%s", root);
            else if (names_cpu(c1 + 1, (size_t)(c2 - c1 - 1)))
                n = snprintf(dir, sizeof dir, "%s/%.*s", root, (int)(c2 - c1 - 1), c1 + 1);
            const int path_len = (int)(len - (size_t)(c2 + 1 - line));
            if (n > 0 && (size_t)n + (size_t)path_len < sizeof dir) {
                const size_t top = (size_t)n;
                snprintf(dir + top, sizeof dir - top, "%.*s", path_len, c2 + 1);
                /* "/" alone is the mount's root itself */
                const size_t end = strlen(dir);
                if (end > top && dir[end - 1] == '/')
                    dir[end - 1] = 0;
                const int q = smallest_on_path(dir, top, v2);
                if (q > 0 && (best == 0 || q < best))
                    best = q;
            }
        }
        line = eol ? eol + 1 : NULL;
    }
    return best;
}

int cpu_quota_of_process(void)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f)
        return 0;
    char text[8192];
    const size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    return cpu_quota_cpus(text, "/sys/fs/cgroup");
}
