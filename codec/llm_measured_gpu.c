/* llm_measured_gpu.c — a measured row's GPU from its gpu_type text (llm_measured_gpu.h).
 *
 * The part: the first of the table's words standing in the text (H100 by its form factor: "PCIe"
 * the PCIe card, "NVL" the NVL card, else SXM; the A100 by its memory, 40 or 80 GB). Then the
 * figures the text states, clause by clause (clauses end at ',' or ';'):
 *   "96GB", "96 GB", "94 GiB"        memory (GB: HBM is sold in binary gigabytes)
 *   "2.4 TB/s", "3350 GB/s"          bandwidth: memory's in a clause naming HBM or memory, tier 0's
 *                                    in one naming NVLink (per GPU and direction, as the
 *                                    preset's networks[0].bandwidth), else refused as unplaced
 *   "400 Gb/s", "400 Gbps"           network bits per GPU: the last tier (÷ 8 for GB/s)
 *   "500 W", "1.0 kW"                power: a limit when below the preset's board power
 * A figure equal to the preset's (its part's memory, board power, bandwidths) keeps the preset;
 * any other makes a variant. A text that says its power is lower ("lower TDP", "power limit",
 * "capped") without a figure is refused: the clock it runs at cannot be told — unless the part
 * is one whose figures its operators publish (the HBM2e H100 SXM: hbm2e_h100). */
#include "llm_measured_gpu.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "text.h"

bool llm__has_word(const char *text, const char *word)
{
    const size_t n = strlen(word);
    for (const char *p = text; *p; p++)
        if (strncasecmp(p, word, n) == 0 && (p == text || !isalnum((unsigned char)p[-1])) &&
            !isalnum((unsigned char)p[n]))
            return true;
    return false;
}

/* A part: the word that names it, an extra word it needs (form factor), the HBM sizes it ships
 * with (GB, from its datasheet, as the presets' $comment cite them: a stated size among them is the
 * part's, another makes a variant) and whether the first size also tells the part (the A100 40
 * and 80 GB); a NULL preset is a part no preset describes (the A100 PCIe). */
typedef struct {
    const char *word, *preset;
    const char *also;
    double memory_gb[3]; /* 0 ends the list */
    bool by_memory;
} gpu_part_t;

static const gpu_part_t parts[] = {
    {"GB300", "gb300_nvl72", NULL, {279, 288}, false},
    {"GB200", "gb200_nvl72", NULL, {180, 186, 192}, false},
    {"B300", "b300", NULL, {268, 270, 288}, false},
    {"B200", "b200", NULL, {180, 192}, false},
    {"H200", "h200", NULL, {141}, false},
    {"H800", "h800", NULL, {80}, false},
    {"H20", "h20", NULL, {96}, false},
    {"H100", "h100_pcie", "PCIe", {80}, false},
    {"H100", "h100_nvl", "NVL", {94}, false},
    {"H100", "h100_sxm", NULL, {80}, false},
    {"MI300X", "mi300x", NULL, {192}, false},
    {"A100", NULL, "PCIe", {0}, false},
    {"A100", "a100_sxm_40g", NULL, {40}, true},
    {"A100", "a100_sxm", NULL, {80}, false},
};

/* Whether a stated memory is one the part ships with. */
static bool part_memory(const gpu_part_t *g, double gb)
{
    for (int i = 0; i < 3 && g->memory_gb[i] > 0; i++)
        if (fabs(gb - g->memory_gb[i]) < 0.5)
            return true;
    return false;
}

/* What the text states, clause by clause (file head). */
typedef struct {
    double memory_gb, memory_gbps, power_w, nvlink_gbps, nic_gbps;
    bool says_lower_power;
    char unplaced[48]; /* a bandwidth no clause names the owner of */
} stated_t;

static bool clause_has(const char *start, size_t len, const char *word)
{
    char buf[256];
    len = len < sizeof buf - 1 ? len : sizeof buf - 1;
    memcpy(buf, start, len);
    buf[len] = '\0';
    return codec_contains_nocase(buf, word);
}

static void read_clause(const char *c, size_t len, stated_t *st)
{
    const bool hbm = clause_has(c, len, "HBM") || clause_has(c, len, "memory");
    const bool nvlink = clause_has(c, len, "NVLink");
    if (clause_has(c, len, "lower TDP") || clause_has(c, len, "lower-TDP") ||
        clause_has(c, len, "power limit") || clause_has(c, len, "capped"))
        st->says_lower_power = true;
    for (const char *p = c; p < c + len; p++) {
        if (!isdigit((unsigned char)*p) ||
            (p > c && (isalnum((unsigned char)p[-1]) || p[-1] == '.')))
            continue;
        char *end;
        const double v = strtod(p, &end);
        const char *u = end + (*end == ' ');
        size_t n = 0;
        while (u + n < c + len && (isalpha((unsigned char)u[n]) || u[n] == '/'))
            n++;
        p = end - 1;
        if (n == 0)
            continue;
        if ((n == 2 && strncmp(u, "GB", 2) == 0) || (n == 3 && strncmp(u, "GiB", 3) == 0)) {
            if (st->memory_gb == 0)
                st->memory_gb = v;
        } else if (strncmp(u, "GB/s", 4) == 0 || strncmp(u, "TB/s", 4) == 0) {
            const double gbps = u[0] == 'T' ? v * 1000 : v;
            if (nvlink)
                st->nvlink_gbps = gbps;
            else if (hbm)
                st->memory_gbps = gbps;
            else if (!st->unplaced[0])
                snprintf(st->unplaced, sizeof st->unplaced, "%g %.4s", v, u);
        } else if (strncmp(u, "Gb/s", 4) == 0 || (n == 4 && strncmp(u, "Gbps", 4) == 0)) {
            st->nic_gbps = v / 8;
        } else if (n == 1 && u[0] == 'W') {
            st->power_w = v;
        } else if (n == 2 && strncmp(u, "kW", 2) == 0) {
            st->power_w = v * 1000;
        }
    }
}

static void read_stated(const char *text, stated_t *st)
{
    memset(st, 0, sizeof *st);
    for (const char *c = text; *c;) {
        const size_t len = strcspn(c, ",;");
        read_clause(c, len, st);
        c += len + (c[len] != '\0');
    }
}

/* The preset's value at a path of members, or 0. */
static double preset_number(const json_t *sys, const char *obj, const char *key)
{
    const json_t *o = obj ? json_object_get(sys, obj) : sys;
    return json_number_value(json_object_get(o, key));
}

static double tier_bandwidth(const json_t *sys, bool last)
{
    const json_t *nets = json_object_get(sys, "networks");
    const size_t n = json_array_size(nets);
    return n ? json_number_value(json_object_get(json_array_get(nets, last ? n - 1 : 0),
                                                 "bandwidth"))
             : 0;
}

/* A stated figure that differs from the preset's by more than rounding (0.5%). */
static bool differs(double stated, double preset)
{
    return stated > 0 && fabs(stated - preset) > 0.005 * preset;
}

static const gpu_part_t *find_part(const char *gpu, const stated_t *st)
{
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        const gpu_part_t *g = &parts[i];
        if (!llm__has_word(gpu, g->word) || (g->also && !llm__has_word(gpu, g->also)) ||
            (g->by_memory && !part_memory(g, st->memory_gb)))
            continue;
        return g;
    }
    return NULL;
}

/* The H100 SXM with HBM2e memory (94–96 GB) is not NVIDIA's catalogued SXM5 part (HBM3, 80 GB,
 * 3.35 TB/s, 700 W) but the one Meta's Grand Teton hosts carry, whose operators state its figures:
 * "96GB HBM2e with 2.4 TB/sec peak memory bandwidth" and "the default 500W power limit"
 * (pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md, Hardware). A text naming that
 * part ("H100 SXM 95GB HBM2e (lower TDP)", torchtitan docs/performance.md) takes those figures
 * where it states none of its own. */
static void hbm2e_h100(const char *gpu, const gpu_part_t *g, stated_t *st)
{
    if (strcmp(g->preset, "h100_sxm") != 0 || !llm__has_word(gpu, "HBM2e"))
        return;
    if (st->memory_gbps == 0)
        st->memory_gbps = 2400;
    if (st->power_w == 0)
        st->power_w = 500;
}

int llm__measured_gpu(const char *gpu, const codec_presets_t *presets, measured_gpu_t *out,
                      char *why, size_t cap)
{
    memset(out, 0, sizeof *out);
    stated_t st;
    read_stated(gpu, &st);
    const gpu_part_t *g = find_part(gpu, &st);
    const json_t *sys = g && g->preset ? codec_presets_find(presets, PRESET_SYSTEM, g->preset)
                                       : NULL;
    if (!sys) {
        snprintf(why, cap, "no preset for this GPU (%s): presets describe the H100 SXM, PCIe and "
                           "NVL, H200, H800, H20, B200, B300, GB200 NVL72, GB300 NVL72, MI300X "
                           "and A100 SXM 40 and 80 GB",
                 gpu);
        return -1;
    }
    if (st.unplaced[0]) {
        snprintf(why, cap, "%s states a bandwidth (%s) the rule cannot place: say whether it is "
                           "the memory's (HBM) or NVLink's",
                 gpu, st.unplaced);
        return -1;
    }
    const double board_w = preset_number(sys, NULL, "power_per_gpu_kw") * 1000;
    hbm2e_h100(gpu, g, &st);
    if (st.says_lower_power && !(st.power_w > 0 && st.power_w < board_w)) {
        snprintf(why, cap, "%s runs below its board power without saying at what power: the "
                           "clock it sustains cannot be told (%s is the %g W part)",
                 gpu, g->preset, board_w);
        return -1;
    }
    out->preset = g->preset;
    if (st.memory_gb > 0 && !part_memory(g, st.memory_gb))
        out->memory_gib = st.memory_gb;
    if (differs(st.memory_gbps, preset_number(sys, "mem1", "GBps")))
        out->memory_gbps = st.memory_gbps;
    if (st.power_w > 0 && st.power_w < board_w - 0.5)
        out->power_limit_w = st.power_w;
    if (differs(st.nvlink_gbps, tier_bandwidth(sys, false)))
        out->nvlink_gbps = st.nvlink_gbps;
    if (differs(st.nic_gbps, tier_bandwidth(sys, true)))
        out->nic_gbps = st.nic_gbps;
    out->variant = out->memory_gib > 0 || out->memory_gbps > 0 || out->power_limit_w > 0 ||
                   out->nvlink_gbps > 0 || out->nic_gbps > 0;
    int n = snprintf(out->label, sizeof out->label, "%s", g->preset);
    static const char *const units[] = {"GiB", "GB/s", "W", "GB/s NVLink", "GB/s NIC"};
    const double figs[] = {out->memory_gib, out->memory_gbps, out->power_limit_w,
                           out->nvlink_gbps, out->nic_gbps};
    for (int i = 0, first = 1; i < 5 && n > 0 && (size_t)n < sizeof out->label; i++)
        if (figs[i] > 0) {
            n += snprintf(out->label + n, sizeof out->label - (size_t)n, "%s%g %s",
                          first ? " (" : ", ", figs[i], units[i]);
            first = 0;
        }
    if (out->variant && n > 0 && (size_t)n < sizeof out->label - 1)
        snprintf(out->label + n, sizeof out->label - (size_t)n, ")");
    return 0;
}

json_t *llm__measured_gpu_system(const measured_gpu_t *g)
{
    if (!g->variant)
        return json_string(g->preset);
    json_t *v = json_pack("{s:s}", "preset", g->preset);
    static const char *const keys[] = {"memory_gib", "memory_gbps", "power_limit_w",
                                       "nvlink_gbps", "nic_gbps"};
    const double figs[] = {g->memory_gib, g->memory_gbps, g->power_limit_w, g->nvlink_gbps,
                           g->nic_gbps};
    for (int i = 0; v && i < 5; i++)
        if (figs[i] > 0 && json_object_set_new(v, keys[i], json_real(figs[i]))) {
            json_decref(v);
            return NULL;
        }
    return v;
}
