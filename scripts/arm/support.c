// Link-time support for the Embedded Swift programs of scripts/arm-check.sh (static, aarch64
// Linux glibc). Embedded Swift's standard library leaves the C-locale float parser to the
// platform: Float("1.5") calls _swift_stdlib_strtof_clocale, which the full runtime provides.
#define _GNU_SOURCE
#include <locale.h>
#include <stdlib.h>

static locale_t c_locale(void) {
    static locale_t loc;
    if (!loc) loc = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    return loc;
}

const char *_swift_stdlib_strtof_clocale(const char *nptr, float *outResult) {
    char *end;
    *outResult = strtof_l(nptr, &end, c_locale());
    return end;
}

const char *_swift_stdlib_strtod_clocale(const char *nptr, double *outResult) {
    char *end;
    *outResult = strtod_l(nptr, &end, c_locale());
    return end;
}
