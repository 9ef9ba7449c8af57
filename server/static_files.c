/* static_files.c — serving the web page from --static: only regular files under its real path,
 * with their content type, an ETag and "no-cache" (revalidate each load: the page is small and
 * must never be stale after an upgrade). */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "handlers.h"

#define STATIC_MAX_FILE_BYTES (16 * 1024 * 1024)

static const struct {
    const char *ext, *type;
} content_types[] = {
    {".html", "text/html; charset=utf-8"}, {".js", "text/javascript; charset=utf-8"},
    {".mjs", "text/javascript; charset=utf-8"}, {".css", "text/css; charset=utf-8"},
    {".json", "application/json"},         {".svg", "image/svg+xml"},
    {".png", "image/png"},                 {".ico", "image/x-icon"},
    {".txt", "text/plain; charset=utf-8"}, {".map", "application/json"},
    {".woff2", "font/woff2"},
};

static const char *content_type_of(const char *path)
{
    const char *dot = strrchr(path, '.');
    for (size_t i = 0; dot && i < sizeof content_types / sizeof content_types[0]; i++)
        if (strcmp(dot, content_types[i].ext) == 0)
            return content_types[i].type;
    return "application/octet-stream";
}

static enum MHD_Result not_found(http_req_t *r)
{
    return http_send_errorf(r, FATHOM_E_NOT_FOUND, NULL, "no such resource: %s", r->url);
}

enum MHD_Result handlers_static(http_req_t *r)
{
    const char *root = r->srv->static_root;
    const char *rel = strcmp(r->url, "/") == 0 ? "/index.html" : r->url;
    /* Refuse anything that could climb out before touching the file system; realpath below is
     * the second fence (symlinks). */
    if (!root || strstr(rel, "..") || strchr(rel, '\\') || strlen(rel) > 1024)
        return not_found(r);
    char joined[PATH_MAX + 1100], real[PATH_MAX];
    snprintf(joined, sizeof joined, "%s%s", root, rel);
    size_t rootlen = strlen(root);
    if (!realpath(joined, real) || strncmp(real, root, rootlen) != 0 || real[rootlen] != '/')
        return not_found(r);
    int fd = open(real, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > STATIC_MAX_FILE_BYTES) {
        if (fd >= 0)
            close(fd);
        return not_found(r);
    }
    char etag[64];
    snprintf(etag, sizeof etag, "\"%llx-%llx\"", (unsigned long long)st.st_size,
             (unsigned long long)st.st_mtime);
    const char *inm = http_header(r, "If-None-Match");
    const char *headers[] = {"ETag", etag, "Cache-Control", "no-cache", NULL};
    if (inm && strcmp(inm, etag) == 0) {
        close(fd);
        return http_send(r, 304, NULL, "", 0, headers);
    }
    char *buf = malloc((size_t)st.st_size + 1);
    ssize_t got = buf ? read(fd, buf, (size_t)st.st_size) : -1;
    close(fd);
    if (got != st.st_size) {
        free(buf);
        return http_send_errorf(r, FATHOM_E_INTERNAL, NULL, "cannot read %s", rel);
    }
    enum MHD_Result rc = http_send(r, 200, content_type_of(real), buf, (size_t)got, headers);
    free(buf);
    return rc;
}
