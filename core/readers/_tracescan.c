/* npuprof.readers._tracescan: a Kineto trace's complete events (scan), and the events of a torch_npu or
 * MindSpore trace_view.json (scan_array, at the end of this file), scanned into columns, compiled.
 *
 * Why: decoding the events into objects and taking one Python list per field
 * was most of both readers' time (docs/performance.md). Here one pass
 * over the bytes fills arrays of numbers and interns each name and category
 * once (by its bytes): per event, no Python object is made at all.
 *
 * scan(buffer, decode) -> tuple, or None. None means "not a file this scanner
 * takes as it is": any shape or value the structs of trace_decode.py would
 * read differently, or refuse (an entry that is not an object, an args that
 * is not an object, a ts given as text, a cat or name that is not text, a used
 * key given twice or spelt with escapes, a number out of the double range,
 * invalid UTF-8 or any other malformed JSON anywhere, nesting past 512). The
 * caller then decodes the file with msgspec/orjson as before, so the scanner
 * only ever answers for files on which both give the same values. It is the
 * stricter of the two: it validates every string and number it skips.
 *
 * The tuple (n = the complete events, ph "X", in file order):
 *   n, ts_ns, dur_ns, usable, cat, name, ints, ok, texts, meta, other, doc
 * ts_ns/dur_ns: bytes of n int64, round(v * 1000) of ts/dur (an int exactly,
 *   a float as Python rounds it), 0 where not usable; usable: n bytes, 1
 *   where ts and dur are numbers (not bools) finite and below 9e15 in
 *   magnitude and dur >= 0 (an absent dur is 0); the base time is the caller's.
 * cat/name: bytes of n int32, codes into texts (list of str; an absent cat or
 *   name is "").
 * ints: bytes of 5n int64, per event pid, tid, args.correlation, args.device,
 *   args.stream; ok: bytes of n, bit k set where field k is a JSON integer
 *   within int64 (its value is then in ints, else 0).
 * meta: list of (name code, pid JSON text or None, args.labels JSON text or
 *   None) of every "M" event; other: the entries that are not complete events;
 * doc: dict of the JSON text of the top level's baseTimeNanoseconds,
 *   distributedInfo and deviceProperties where present.
 * decode(bytes) -> str is called for a name or category holding escapes
 * (once per distinct text), with the string's JSON text, quotes included; a
 * ValueError it raises (msgspec's DecodeError) declines the file, any other
 * error is raised by scan().
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#if PY_VERSION_HEX < 0x030A0000
static inline PyObject *Py_NewRef(PyObject *o) { Py_INCREF(o); return o; }
#endif

#define MAX_DEPTH 512
#define NUM_INTS 5

typedef struct {
    const unsigned char *p, *end;
    int fail;                 /* 1: not taken (the caller decodes otherwise); 2: a Python error is set */
} Cursor;

/* -- growable columns ------------------------------------------------------------------------------- */
typedef struct {
    char *data;
    Py_ssize_t len, cap;      /* in bytes */
} Buf;

static int
buf_reserve(Buf *b, Py_ssize_t more)
{
    if (b->len + more <= b->cap)
        return 0;
    Py_ssize_t cap = b->cap ? b->cap : 1 << 16;
    while (cap < b->len + more)
        cap *= 2;
    char *d = PyMem_Realloc(b->data, cap);
    if (!d) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = d;
    b->cap = cap;
    return 0;
}

/* the n bytes at v appended (the room reserved before) */
static inline void
buf_put(Buf *b, const void *v, Py_ssize_t n)
{
    memcpy(b->data + b->len, v, n);
    b->len += n;
}

/* -- interning: raw string bytes -> code ----------------------------------------------------------- */
typedef struct {
    const unsigned char *s;
    Py_ssize_t len;
    uint64_t hash;
    int32_t code;
} Slot;

typedef struct {
    Slot *slots;
    Py_ssize_t cap, used;     /* cap a power of two */
    PyObject *texts;          /* list of str (of bytes where as_bytes), by code */
    PyObject *decode;
    int as_bytes;             /* the texts kept as bytes, not decoded (JSON texts of whole values) */
} Interner;

/* eight bytes at a time: the args texts interned can be kilobytes (call stacks) */
static uint64_t
hash_bytes(const unsigned char *s, Py_ssize_t n)
{
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)n;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v;
        memcpy(&v, s + i, 8);
        h = (h ^ v) * 0x9E3779B97F4A7C15ULL;
        h ^= h >> 32;
    }
    for (; i < n; i++) {
        h ^= s[i];
        h *= 1099511628211ULL;
    }
    return h ^ (h >> 29);
}

static int
interner_grow(Interner *t)
{
    Py_ssize_t cap = t->cap ? t->cap * 2 : 1024;
    Slot *slots = PyMem_Calloc(cap, sizeof(Slot));
    if (!slots) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < t->cap; i++) {
        if (!t->slots[i].s)
            continue;
        Py_ssize_t j = (Py_ssize_t)(t->slots[i].hash & (uint64_t)(cap - 1));
        while (slots[j].s)
            j = (j + 1) & (cap - 1);
        slots[j] = t->slots[i];
    }
    PyMem_Free(t->slots);
    t->slots = slots;
    t->cap = cap;
    return 0;
}

/* after a conversion failed: 1 where its error is a ValueError, the input's fault (cleared: the file is
 * declined, the caller's decoder says what it is); else 2, the error left set (out of memory, an interrupt,
 * a decode callable that is not one), for scan() to raise */
static int
declined_or_raised(void)
{
    if (PyErr_ExceptionMatches(PyExc_ValueError)) {
        PyErr_Clear();
        return 1;
    }
    return 2;
}

/* the code of the string whose content (between the quotes) is s[0:n]; -1 with c->fail set */
static int32_t
intern(Interner *t, Cursor *c, const unsigned char *s, Py_ssize_t n, int escaped)
{
    if ((t->used + 1) * 2 > t->cap && interner_grow(t) < 0) {
        c->fail = 2;
        return -1;
    }
    uint64_t h = hash_bytes(s, n);
    Py_ssize_t j = (Py_ssize_t)(h & (uint64_t)(t->cap - 1));
    while (t->slots[j].s) {
        Slot *e = &t->slots[j];
        if (e->hash == h && e->len == n && memcmp(e->s, s, n) == 0)
            return e->code;
        j = (j + 1) & (t->cap - 1);
    }
    PyObject *text;
    if (t->as_bytes)
        text = PyBytes_FromStringAndSize((const char *)s, n);
    else if (escaped) {
        PyObject *raw = PyBytes_FromStringAndSize((const char *)s - 1, n + 2);
        if (!raw) {
            c->fail = 2;
            return -1;
        }
        text = PyObject_CallFunctionObjArgs(t->decode, raw, NULL);
        Py_DECREF(raw);
        if (!text) {
            c->fail = declined_or_raised();     /* msgspec refuses it: the caller's decoder decides */
            return -1;
        }
        if (!PyUnicode_Check(text)) {
            Py_DECREF(text);
            c->fail = 1;
            return -1;
        }
    }
    else
        text = PyUnicode_DecodeUTF8((const char *)s, n, "strict");
    if (!text) {
        c->fail = declined_or_raised();
        return -1;
    }
    int32_t code = (int32_t)PyList_GET_SIZE(t->texts);
    int rc = PyList_Append(t->texts, text);
    Py_DECREF(text);
    if (rc < 0) {
        c->fail = 2;
        return -1;
    }
    Slot *e = &t->slots[j];
    e->s = s;
    e->len = n;
    e->hash = h;
    e->code = code;
    t->used++;
    return code;
}

/* -- the JSON grammar ------------------------------------------------------------------------------ */
static inline void
skip_ws(Cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\r' || *c->p == '\t'))
        c->p++;
}

/* 1 where a byte ends a run of plain string bytes: '"', '\\', control characters, non-ASCII */
static unsigned char STOP[256];

static void
init_tables(void)
{
    for (int i = 0; i < 256; i++)
        STOP[i] = (i < 0x20 || i == '"' || i == '\\' || i >= 0x80);
}

#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SWAR 1
/* the high bit of each byte of v that is '"', '\\', below 0x20 or non-ASCII; above the first such byte a
 * bit may be set wrongly (a borrow), never below it, so the lowest set bit is the first stop */
static inline uint64_t
stop_bytes(uint64_t v)
{
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
    uint64_t quote = v ^ (ones * '"'), slash = v ^ (ones * '\\');
    return (((quote - ones) & ~quote) | ((slash - ones) & ~slash) | ((v - ones * 0x20) & ~v) | v) & high;
}
#else
#define SWAR 0
#endif

#if defined(__SSE2__) && defined(__GNUC__)   /* __builtin_ctz below, as SWAR's */
#define SSE2 1
#include <emmintrin.h>
#else
#define SSE2 0
#endif

/* the first byte at or after p (before end) that ends a run of plain string bytes (see STOP), else end:
 * sixteen bytes at a time where SSE2 is there (every x86-64), then eight (SWAR), then one */
static inline const unsigned char *
plain_run(const unsigned char *p, const unsigned char *end)
{
#if SSE2
    const __m128i quote = _mm_set1_epi8('"'), slash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)p);
        /* a signed compare: bytes >= 0x80 are negative, below 0x20 as control characters are */
        __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, slash)),
                                    _mm_cmplt_epi8(v, space));
        int mask = _mm_movemask_epi8(stop);
        if (mask)
            return p + __builtin_ctz((unsigned)mask);
        p += 16;
    }
#endif
#if SWAR
    while (end - p >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        uint64_t stop = stop_bytes(v);
        if (stop)
            return p + (__builtin_ctzll(stop) >> 3);
        p += 8;
    }
#endif
    while (p < end && !STOP[*p])
        p++;
    return p;
}

static inline int
hexval(unsigned char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

static int
read_u4(Cursor *c, unsigned *out)
{
    if (c->end - c->p < 4)
        return -1;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(c->p[i]);
        if (h < 0)
            return -1;
        v = v * 16 + (unsigned)h;
    }
    c->p += 4;
    *out = v;
    return 0;
}

/* one UTF-8 sequence starting at c->p (a byte >= 0x80), as Python's strict decoder takes it */
static int
skip_utf8(Cursor *c)
{
    const unsigned char *p = c->p;
    Py_ssize_t left = c->end - p;
    unsigned char b0 = p[0];
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        if (left < 2 || (p[1] & 0xC0) != 0x80)
            return -1;
        c->p += 2;
        return 0;
    }
    if (b0 >= 0xE0 && b0 <= 0xEF) {
        if (left < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80)
            return -1;
        if (b0 == 0xE0 && p[1] < 0xA0)
            return -1;     /* overlong */
        if (b0 == 0xED && p[1] >= 0xA0)
            return -1;     /* a surrogate */
        c->p += 3;
        return 0;
    }
    if (b0 >= 0xF0 && b0 <= 0xF4) {
        if (left < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80)
            return -1;
        if (b0 == 0xF0 && p[1] < 0x90)
            return -1;     /* overlong */
        if (b0 == 0xF4 && p[1] >= 0x90)
            return -1;     /* past U+10FFFF */
        c->p += 4;
        return 0;
    }
    return -1;
}

/* a string at c->p (its opening quote): its content is [*s, *s + *n); *escaped if it holds a backslash */
static int
scan_string(Cursor *c, const unsigned char **s, Py_ssize_t *n, int *escaped)
{
    c->p++;    /* the quote */
    *s = c->p;
    *escaped = 0;
    for (;;) {
        c->p = plain_run(c->p, c->end);
        if (c->p >= c->end)
            return -1;
        unsigned char ch = *c->p;
        if (ch == '"') {
            *n = c->p - *s;
            c->p++;
            return 0;
        }
        if (ch == '\\') {
            *escaped = 1;
            c->p++;
            if (c->p >= c->end)
                return -1;
            ch = *c->p++;
            if (ch == 'u') {
                unsigned u;
                if (read_u4(c, &u) < 0)
                    return -1;
                if (u >= 0xDC00 && u <= 0xDFFF)
                    return -1;     /* a lone low surrogate */
                if (u >= 0xD800 && u <= 0xDBFF) {    /* a high surrogate: its low half must follow */
                    unsigned lo;
                    if (c->end - c->p < 2 || c->p[0] != '\\' || c->p[1] != 'u')
                        return -1;
                    c->p += 2;
                    if (read_u4(c, &lo) < 0 || lo < 0xDC00 || lo > 0xDFFF)
                        return -1;
                }
            }
            else if (!(ch == '"' || ch == '\\' || ch == '/' || ch == 'b' || ch == 'f' || ch == 'n' || ch == 'r'
                       || ch == 't'))
                return -1;
            continue;
        }
        if (ch < 0x20)
            return -1;
        if (skip_utf8(c) < 0)
            return -1;
    }
}

enum { NUM_INT = 1, NUM_BIGINT = 2, NUM_FLOAT = 3 };

static const double POW10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* a number at c->p: its kind, and its value (*i for NUM_INT, *d for NUM_FLOAT) when want;
 * -1 where it is not a JSON number or (wanted) a float out of the double range */
static int
scan_number(Cursor *c, int want, int *kind, int64_t *i, double *d)
{
    const unsigned char *start = c->p, *p = c->p, *end = c->end;
    int neg = 0;
    if (p < end && *p == '-') {
        neg = 1;
        p++;
    }
    if (p >= end)
        return -1;
    const unsigned char *digits = p;
    if (*p == '0')
        p++;
    else if (*p >= '1' && *p <= '9')
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    else
        return -1;
    Py_ssize_t int_digits = p - digits;
    int is_float = 0;
    const unsigned char *frac = NULL;
    Py_ssize_t frac_digits = 0;
    if (p < end && *p == '.') {
        p++;
        frac = p;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
        frac_digits = p - frac;
        if (!frac_digits)
            return -1;
        is_float = 1;
    }
    int has_exp = 0;
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        const unsigned char *e = p;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
        if (p == e)
            return -1;
        is_float = has_exp = 1;
    }
    c->p = p;
    if (!is_float) {
        *kind = NUM_INT;
        if (!want)
            return 0;
        if (int_digits > 19) {
            *kind = NUM_BIGINT;
            return 0;
        }
        uint64_t v = 0;
        for (const unsigned char *q = digits; q < digits + int_digits; q++)
            v = v * 10 + (uint64_t)(*q - '0');     /* 19 digits never wrap a uint64 */
        if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX) {
            *kind = NUM_BIGINT;
            return 0;
        }
        *i = neg ? (int64_t)(0 - v) : (int64_t)v;
        return 0;
    }
    *kind = NUM_FLOAT;
    if (!want)
        return 0;
    if (!has_exp && int_digits + frac_digits <= 15) {
        /* exact: an integer below 10^15 < 2^53 divided by an exact power of ten, one rounding */
        uint64_t m = 0;
        for (const unsigned char *q = digits; q < digits + int_digits; q++)
            m = m * 10 + (uint64_t)(*q - '0');
        for (const unsigned char *q = frac; q < frac + frac_digits; q++)
            m = m * 10 + (uint64_t)(*q - '0');
        double v = (double)m / POW10[frac_digits];
        *d = neg ? -v : v;
        return 0;
    }
    /* Python's own correctly rounded conversion (float(text)); the text ends at a JSON delimiter */
    char tmp[64];
    Py_ssize_t len = p - start;
    char *text = tmp;
    if (len >= (Py_ssize_t)sizeof(tmp)) {
        text = PyMem_Malloc(len + 1);
        if (!text) {
            PyErr_NoMemory();
            c->fail = 2;
            return -1;
        }
    }
    memcpy(text, start, len);
    text[len] = 0;
    char *stop = NULL;
    double v = PyOS_string_to_double(text, &stop, NULL);
    int failed = v == -1.0 && PyErr_Occurred();
    int bad = failed || stop != text + len || !isfinite(v);
    if (text != tmp)
        PyMem_Free(text);
    if (failed && declined_or_raised() == 2) {
        c->fail = 2;
        return -1;
    }
    if (bad)
        return -1;     /* out of range (msgspec refuses it): the caller decides */
    *d = v;
    return 0;
}

static int skip_value(Cursor *c, int depth);

/* at a container's opening bracket: 1 where it is empty (its close skipped), else 0 at its first item */
static inline int
open_container(Cursor *c, unsigned char close)
{
    c->p++;
    skip_ws(c);
    if (c->p < c->end && *c->p == close) {
        c->p++;
        return 1;
    }
    return 0;
}

/* a member's key (a string: [*k, *k + *kn), *esc if spelt with escapes) and its ':', white space skipped */
static inline int
read_key(Cursor *c, const unsigned char **k, Py_ssize_t *kn, int *esc)
{
    if (c->p >= c->end || *c->p != '"' || scan_string(c, k, kn, esc) < 0)
        return -1;
    skip_ws(c);
    if (c->p >= c->end || *c->p != ':')
        return -1;
    c->p++;
    skip_ws(c);
    return 0;
}

/* after an item: 1 at ',' (skipped, with the white space after it), 0 at the container's close (skipped),
 * -1 at anything else */
static inline int
next_item(Cursor *c, unsigned char close)
{
    skip_ws(c);
    if (c->p >= c->end)
        return -1;
    if (*c->p == ',') {
        c->p++;
        skip_ws(c);
        return 1;
    }
    if (*c->p == close) {
        c->p++;
        return 0;
    }
    return -1;
}

static int
skip_literal(Cursor *c, const char *word, Py_ssize_t n)
{
    if (c->end - c->p < n || memcmp(c->p, word, n) != 0)
        return -1;
    c->p += n;
    return 0;
}

static int
skip_container(Cursor *c, int depth, unsigned char close)
{
    if (depth > MAX_DEPTH)
        return -1;
    if (open_container(c, close))
        return 0;
    for (;;) {
        if (close == '}') {
            const unsigned char *s;
            Py_ssize_t n;
            int esc;
            if (read_key(c, &s, &n, &esc) < 0)
                return -1;
        }
        if (skip_value(c, depth + 1) < 0)
            return -1;
        int more = next_item(c, close);
        if (more <= 0)
            return more;
    }
}

static int
skip_value(Cursor *c, int depth)
{
    if (c->p >= c->end)
        return -1;
    switch (*c->p) {
    case '"': {
        const unsigned char *s;
        Py_ssize_t n;
        int esc;
        return scan_string(c, &s, &n, &esc);
    }
    case '{':
        return skip_container(c, depth, '}');
    case '[':
        return skip_container(c, depth, ']');
    case 't':
        return skip_literal(c, "true", 4);
    case 'f':
        return skip_literal(c, "false", 5);
    case 'n':
        return skip_literal(c, "null", 4);
    default: {
        int kind;
        return scan_number(c, 0, &kind, NULL, NULL);
    }
    }
}

/* -- events ---------------------------------------------------------------------------------------- */
typedef struct {
    Buf ts, dur, usable, cat, name, ints, ok;
    Py_ssize_t n, other;
    Interner names;
    PyObject *meta;
    int32_t empty_code;
} Columns;

enum { F_PH = 1, F_CAT = 2, F_NAME = 4, F_PID = 8, F_TID = 16, F_TS = 32, F_DUR = 64, F_ARGS = 128, F_ID = 256 };
enum { A_CORR = 1, A_DEVICE = 2, A_STREAM = 4, A_LABELS = 8 };

static inline int
key_is(const unsigned char *s, Py_ssize_t n, const char *word)
{
    Py_ssize_t k = (Py_ssize_t)strlen(word);
    return n == k && memcmp(s, word, k) == 0;
}

/* the field an event's key names (0: a key no reader takes); each reader masks off the ones it skips */
static inline int
event_field(const unsigned char *k, Py_ssize_t kn)
{
    switch (kn) {
    case 2:
        return key_is(k, kn, "ph") ? F_PH : key_is(k, kn, "ts") ? F_TS : key_is(k, kn, "id") ? F_ID : 0;
    case 3:
        return key_is(k, kn, "cat") ? F_CAT : key_is(k, kn, "pid") ? F_PID : key_is(k, kn, "tid") ? F_TID
             : key_is(k, kn, "dur") ? F_DUR : 0;
    case 4:
        return key_is(k, kn, "name") ? F_NAME : key_is(k, kn, "args") ? F_ARGS : 0;
    }
    return 0;
}

typedef struct {
    int kind;          /* 0: not a number (absent, null, bool, other) */
    int64_t i;
    double d;
} Number;

/* a value that is Any in the structs and used as a number */
static int
read_number_value(Cursor *c, Number *num)
{
    num->kind = 0;
    if (c->p < c->end && (*c->p == '-' || (*c->p >= '0' && *c->p <= '9')))
        return scan_number(c, 1, &num->kind, &num->i, &num->d);
    return skip_value(c, 1);
}

/* ts/dur as Python's _number takes them: not a bool, finite, |v| < 9e15 (µs whose ns fit int64) */
static inline int
usable_us(const Number *v, int64_t *ns)
{
    if (v->kind == NUM_INT) {
        if (v->i <= -9000000000000000LL || v->i >= 9000000000000000LL)
            return 0;
        *ns = v->i * 1000;
        return 1;
    }
    if (v->kind == NUM_FLOAT) {
        if (!(fabs(v->d) < 9e15))
            return 0;
        *ns = (int64_t)nearbyint(v->d * 1000.0);   /* round half to even, as Python's round() */
        return 1;
    }
    return 0;
}

/* an object's members: each key matched against the used ones (a key spelt with escapes is refused) */
static int
read_args(Cursor *c, Number *ints, int *seen, const unsigned char **labels, Py_ssize_t *labels_len)
{
    if (open_container(c, '}'))
        return 0;
    for (;;) {
        const unsigned char *k;
        Py_ssize_t kn;
        int esc;
        if (read_key(c, &k, &kn, &esc) < 0 || esc)
            return -1;
        int field = 0;
        if (key_is(k, kn, "correlation"))
            field = A_CORR;
        else if (key_is(k, kn, "device"))
            field = A_DEVICE;
        else if (key_is(k, kn, "stream"))
            field = A_STREAM;
        else if (key_is(k, kn, "labels"))
            field = A_LABELS;
        if (field & *seen)
            return -1;     /* given twice */
        *seen |= field;
        if (field == A_LABELS) {
            const unsigned char *v = c->p;
            if (skip_value(c, 2) < 0)
                return -1;
            *labels = v;
            *labels_len = c->p - v;
        }
        else if (field) {
            if (read_number_value(c, &ints[field == A_CORR ? 2 : field == A_DEVICE ? 3 : 4]) < 0)
                return -1;
        }
        else if (skip_value(c, 2) < 0)
            return -1;
        int more = next_item(c, '}');
        if (more <= 0)
            return more;
    }
}

static PyObject *
json_text(const unsigned char *s, Py_ssize_t n)
{
    if (!s)
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)s, n);
}

/* one entry of traceEvents at c->p */
static int
read_event(Cursor *c, Columns *out)
{
    if (c->p >= c->end || *c->p != '{')
        return -1;     /* not an object: the structs refuse it */
    int seen = 0, args_seen = 0;
    int ph = 0;    /* 'X', 'M' or 0 */
    const unsigned char *cat = NULL, *name = NULL, *labels = NULL, *pid_text = NULL;
    Py_ssize_t cat_n = 0, name_n = 0, labels_n = 0, pid_n = 0;
    int cat_esc = 0, name_esc = 0, cat_str = 1, name_str = 1;
    Number ints[NUM_INTS] = {{0}};
    Number ts = {0}, dur = {NUM_INT, 0, 0.0};     /* an absent dur is 0 */
    int ts_text = 0;
    if (open_container(c, '}'))
        goto done;
    for (;;) {
        const unsigned char *k;
        Py_ssize_t kn;
        int esc;
        if (read_key(c, &k, &kn, &esc) < 0 || esc)
            return -1;
        int field = event_field(k, kn) & ~F_ID;     /* a Kineto event's id is not read */
        if (field & seen)
            return -1;     /* given twice */
        seen |= field;
        if (c->p >= c->end)
            return -1;
        unsigned char ch = *c->p;
        switch (field) {
        case F_PH:
            if (ch == '"') {
                const unsigned char *s;
                Py_ssize_t n;
                if (scan_string(c, &s, &n, &esc) < 0 || esc)
                    return -1;
                ph = (n == 1 && (s[0] == 'X' || s[0] == 'M')) ? s[0] : 0;
            }
            else if (skip_value(c, 1) < 0)
                return -1;
            break;
        case F_CAT:
        case F_NAME: {
            const unsigned char *s = NULL;
            Py_ssize_t n = 0;
            int is_str = ch == '"';
            if (is_str ? scan_string(c, &s, &n, &esc) < 0 : skip_value(c, 1) < 0)
                return -1;
            if (field == F_CAT)
                cat = s, cat_n = n, cat_esc = esc, cat_str = is_str;
            else
                name = s, name_n = n, name_esc = esc, name_str = is_str;
            break;
        }
        case F_PID:
            pid_text = c->p;
            if (read_number_value(c, &ints[0]) < 0)
                return -1;
            pid_n = c->p - pid_text;
            break;
        case F_TID:
            if (read_number_value(c, &ints[1]) < 0)
                return -1;
            break;
        case F_TS:
            ts_text = ch == '"';
            if (read_number_value(c, &ts) < 0)
                return -1;
            break;
        case F_DUR:
            if (read_number_value(c, &dur) < 0)
                return -1;
            break;
        case F_ARGS:
            if (ch == '{') {
                if (read_args(c, ints, &args_seen, &labels, &labels_n) < 0)
                    return -1;
            }
            else if (ch == 'n') {
                if (skip_literal(c, "null", 4) < 0)
                    return -1;
            }
            else
                return -1;     /* an args that is not an object: the structs refuse it */
            break;
        default:
            if (skip_value(c, 1) < 0)
                return -1;
        }
        int more = next_item(c, '}');
        if (more < 0)
            return -1;
        if (!more)
            break;
    }
done:
    if (ph == 'M') {
        out->other++;
        int32_t code = out->empty_code;
        if (name) {
            code = intern(&out->names, c, name, name_n, name_esc);
            if (code < 0)
                return -1;
        }
        else if (!name_str)
            code = -1;     /* a name that is not text: never "process_labels" */
        PyObject *pid = pid_text ? json_text(pid_text, pid_n) : json_text(NULL, 0);
        PyObject *lab = json_text(labels, labels_n);
        PyObject *item = (pid && lab) ? Py_BuildValue("(iOO)", (int)code, pid, lab) : NULL;
        Py_XDECREF(pid);
        Py_XDECREF(lab);
        if (!item || PyList_Append(out->meta, item) < 0) {
            Py_XDECREF(item);
            c->fail = 2;
            return -1;
        }
        Py_DECREF(item);
        return 0;
    }
    if (ph != 'X') {
        out->other++;
        return 0;
    }
    if (!cat_str || !name_str || ts_text)
        return -1;     /* a cat or name that is not text, a ts given as text: decided by the Python rules */
    int32_t cat_code = cat ? intern(&out->names, c, cat, cat_n, cat_esc) : out->empty_code;
    if (cat_code < 0)
        return -1;
    int32_t name_code = name ? intern(&out->names, c, name, name_n, name_esc) : out->empty_code;
    if (name_code < 0)
        return -1;
    if (buf_reserve(&out->ts, 8) < 0 || buf_reserve(&out->dur, 8) < 0 || buf_reserve(&out->usable, 1) < 0
        || buf_reserve(&out->cat, 4) < 0 || buf_reserve(&out->name, 4) < 0
        || buf_reserve(&out->ints, 8 * NUM_INTS) < 0 || buf_reserve(&out->ok, 1) < 0) {
        c->fail = 2;
        return -1;
    }
    int64_t t_ns = 0, d_ns = 0;
    int usable = usable_us(&ts, &t_ns) && usable_us(&dur, &d_ns) && d_ns >= 0;
    if (!usable)
        t_ns = d_ns = 0;
    /* dur < 0 as a float: -0.0 is usable (not < 0), a tiny negative that rounds to 0 is not */
    if (usable && dur.kind == NUM_FLOAT && dur.d < 0) {
        usable = 0;
        t_ns = d_ns = 0;
    }
    buf_put(&out->ts, &t_ns, 8);
    buf_put(&out->dur, &d_ns, 8);
    out->usable.data[out->usable.len++] = (char)usable;
    buf_put(&out->cat, &cat_code, 4);
    buf_put(&out->name, &name_code, 4);
    unsigned char ok = 0;
    for (int f = 0; f < NUM_INTS; f++) {
        int64_t v = ints[f].kind == NUM_INT ? ints[f].i : 0;
        if (ints[f].kind == NUM_INT)
            ok |= (unsigned char)(1 << f);
        buf_put(&out->ints, &v, 8);
    }
    out->ok.data[out->ok.len++] = (char)ok;
    out->n++;
    return 0;
}

static int
read_events(Cursor *c, Columns *out)
{
    if (c->p >= c->end || *c->p != '[')
        return -1;
    if (open_container(c, ']'))
        return 0;
    for (;;) {
        if (read_event(c, out) < 0)
            return -1;
        int more = next_item(c, ']');
        if (more <= 0)
            return more;
    }
}

static PyObject *
buf_bytes(Buf *b)
{
    return PyBytes_FromStringAndSize(b->data ? b->data : "", b->len);
}

static void
columns_free(Columns *col)
{
    Buf *bufs[] = {&col->ts, &col->dur, &col->usable, &col->cat, &col->name, &col->ints, &col->ok};
    for (size_t k = 0; k < sizeof(bufs) / sizeof(bufs[0]); k++)
        PyMem_Free(bufs[k]->data);
    PyMem_Free(col->names.slots);
    Py_XDECREF(col->names.texts);
    Py_XDECREF(col->meta);
}

static int
read_document(Cursor *c, Columns *out, PyObject *doc)
{
    skip_ws(c);
    if (c->p >= c->end || *c->p != '{')
        return -1;     /* a bare event list, or not an object: the caller's decoder */
    int have_events = 0, seen = 0;
    if (open_container(c, '}'))
        return -1;     /* no traceEvents */
    for (;;) {
        const unsigned char *k;
        Py_ssize_t kn;
        int esc;
        if (read_key(c, &k, &kn, &esc) < 0 || esc)
            return -1;
        const char *keep = NULL;
        int bit = 0;
        if (key_is(k, kn, "baseTimeNanoseconds"))
            keep = "baseTimeNanoseconds", bit = 1;
        else if (key_is(k, kn, "distributedInfo"))
            keep = "distributedInfo", bit = 2;
        else if (key_is(k, kn, "deviceProperties"))
            keep = "deviceProperties", bit = 4;
        if (key_is(k, kn, "traceEvents")) {
            if (have_events || read_events(c, out) < 0)
                return -1;
            have_events = 1;
        }
        else if (keep) {
            if (seen & bit)
                return -1;
            seen |= bit;
            const unsigned char *v = c->p;
            if (skip_value(c, 1) < 0)
                return -1;
            PyObject *text = json_text(v, c->p - v);
            if (!text || PyDict_SetItemString(doc, keep, text) < 0) {
                Py_XDECREF(text);
                c->fail = 2;
                return -1;
            }
            Py_DECREF(text);
        }
        else if (skip_value(c, 1) < 0)
            return -1;
        int more = next_item(c, '}');
        if (more < 0)
            return -1;
        if (!more)
            break;
    }
    skip_ws(c);
    if (c->p != c->end || !have_events)
        return -1;     /* trailing bytes, or no traceEvents */
    return 0;
}

/* -- the entry points' frame ------------------------------------------------------------------------ */
/* What an entry point scans into (cols): made ready once the buffer is held, read, turned into the result
 * where the read took the file, and released whatever happened (cols starts zeroed) */
typedef struct {
    const char *format;                      /* PyArg_ParseTuple's "OO:<name>": (buffer, decode) */
    int (*prepare)(void *cols, Cursor *c);   /* 0, or -1 with a Python error set */
    int (*read)(Cursor *c, void *cols);      /* 0, or -1 with c->fail: 1 declined, 2 a Python error set */
    PyObject *(*result)(void *cols);         /* NULL with a Python error set */
    void (*release)(void *cols);
} ScanKind;

/* scan(buffer, decode) and scan_array(buffer, decode): the arguments parsed, the buffer held for the read,
 * the interner `names` made with decode and its "" coded first (in *empty_code), then kind's steps; None
 * where the read declined the file, NULL where a Python error is set */
static PyObject *
scan_with(PyObject *args, const ScanKind *kind, void *cols, Interner *names, int32_t *empty_code)
{
    PyObject *source, *decode;
    if (!PyArg_ParseTuple(args, kind->format, &source, &decode))
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(source, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *result = NULL;
    Cursor c = {(const unsigned char *)view.buf, (const unsigned char *)view.buf + view.len, 0};
    names->decode = decode;
    names->texts = PyList_New(0);
    if (names->texts && (*empty_code = intern(names, &c, (const unsigned char *)"", 0, 0)) >= 0
        && kind->prepare(cols, &c) == 0) {
        int rc = kind->read(&c, cols);
        if (c.fail != 2)
            result = rc < 0 || c.fail ? Py_NewRef(Py_None) : kind->result(cols);
    }
    kind->release(cols);
    PyBuffer_Release(&view);
    return result;
}

/* scan's columns, and the document's values kept */
typedef struct {
    Columns col;
    PyObject *doc;
} KinetoScan;

static int
kineto_prepare(void *cols, Cursor *Py_UNUSED(c))
{
    KinetoScan *k = cols;
    k->doc = PyDict_New();
    k->col.meta = PyList_New(0);
    return k->doc && k->col.meta ? 0 : -1;
}

static int
kineto_read(Cursor *c, void *cols)
{
    KinetoScan *k = cols;
    return read_document(c, &k->col, k->doc);
}

static PyObject *
kineto_result(void *cols)
{
    KinetoScan *k = cols;
    Columns *col = &k->col;
    PyObject *result = NULL;
    PyObject *ts = buf_bytes(&col->ts), *dur = buf_bytes(&col->dur), *usable = buf_bytes(&col->usable),
             *cat = buf_bytes(&col->cat), *name = buf_bytes(&col->name), *ints = buf_bytes(&col->ints),
             *ok = buf_bytes(&col->ok);
    if (ts && dur && usable && cat && name && ints && ok)
        result = Py_BuildValue("(nOOOOOOOOOnO)", col->n, ts, dur, usable, cat, name, ints, ok, col->names.texts,
                               col->meta, col->other, k->doc);
    Py_XDECREF(ts);
    Py_XDECREF(dur);
    Py_XDECREF(usable);
    Py_XDECREF(cat);
    Py_XDECREF(name);
    Py_XDECREF(ints);
    Py_XDECREF(ok);
    return result;
}

static void
kineto_release(void *cols)
{
    KinetoScan *k = cols;
    columns_free(&k->col);
    Py_XDECREF(k->doc);
}

static PyObject *
scan(PyObject *Py_UNUSED(self), PyObject *args)
{
    static const ScanKind kind = {"OO:scan", kineto_prepare, kineto_read, kineto_result, kineto_release};
    KinetoScan k;
    memset(&k, 0, sizeof(k));
    return scan_with(args, &kind, &k, &k.col.names, &k.col.empty_code);
}

/* -- trace_view.json (torch_npu, MindSpore): a bare event array ---------------------------------------- */
/* scan_array(buffer, decode) -> tuple, or None (declined: the caller decodes the file with msgspec's
 * _AnyEvent structs or orjson, as before). Declined: anything but one JSON array of objects (white space
 * around it), a key of an event spelt with escapes or one of ph cat name pid tid ts dur id args given
 * twice, any of those but args holding an object or an array, a ph spelt with escapes, and a read event
 * (ph X, C, i or I) the Python rules would take one by one (CompactTrace's "odd" ones): a pid or tid that
 * is not a JSON integer within int64, a name that is not text (an absent one is ""), a cat that is neither
 * text nor null, an absent ts; and, as the Kineto scan, malformed JSON anywhere, invalid UTF-8, a used
 * number out of the double range, nesting past 512.
 *
 * The tuple (n = the read events, in file order; entries = every entry of the array):
 *   entries, n, phase, ts, dur, pid, tid, pidc, pids, name, cat, texts, arg, args, fixups, meta, flows
 * phase: n bytes, 0 X, 1 C, 2 i or I; ts/dur: n int64 each, us_text_to_ns of the value (dur 0 but for X)
 *   where a text of [-]digits[.digits] or a number (v * 1000 within 2^62 in magnitude, rounded half to
 *   even), else 0 and the value's JSON text in fixups: a list of (row, 0 for ts / 1 for dur, JSON text);
 * pid/tid: n int64; pidc: n int32, codes into pids (list of int: each distinct pid, in order of first
 *   appearance); name/cat: n int32, codes into texts (list of str); cat -1 where absent or null;
 * arg: n int32, codes into args (list of bytes: each distinct JSON text of an args, b"null" where absent);
 * meta, flows: the JSON text of an array of the "M" events, and of the "s" and "f" events, as in the file.
 */
/* the distinct pids, coded in order of first appearance (a trace has a few processes) */
typedef struct {
    int64_t *keys;
    int32_t *codes;
    Py_ssize_t cap, used;     /* cap a power of two; codes -1 where free */
    PyObject *values;         /* list of int, by code */
} PidCodes;

static int
pid_codes_grow(PidCodes *t)
{
    Py_ssize_t cap = t->cap ? t->cap * 2 : 64;
    int64_t *keys = PyMem_Malloc(cap * sizeof(int64_t));
    int32_t *codes = PyMem_Malloc(cap * sizeof(int32_t));
    if (!keys || !codes) {
        PyMem_Free(keys);
        PyMem_Free(codes);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t j = 0; j < cap; j++)
        codes[j] = -1;
    for (Py_ssize_t i = 0; i < t->cap; i++) {
        if (t->codes[i] < 0)
            continue;
        Py_ssize_t j = (Py_ssize_t)(((uint64_t)t->keys[i] * 0x9E3779B97F4A7C15ULL) >> 20) & (cap - 1);
        while (codes[j] >= 0)
            j = (j + 1) & (cap - 1);
        keys[j] = t->keys[i];
        codes[j] = t->codes[i];
    }
    PyMem_Free(t->keys);
    PyMem_Free(t->codes);
    t->keys = keys;
    t->codes = codes;
    t->cap = cap;
    return 0;
}

/* the code of pid v; -1 with c->fail set */
static int32_t
pid_code(PidCodes *t, Cursor *c, int64_t v)
{
    if ((t->used + 1) * 2 > t->cap && pid_codes_grow(t) < 0) {
        c->fail = 2;
        return -1;
    }
    Py_ssize_t j = (Py_ssize_t)(((uint64_t)v * 0x9E3779B97F4A7C15ULL) >> 20) & (t->cap - 1);
    while (t->codes[j] >= 0) {
        if (t->keys[j] == v)
            return t->codes[j];
        j = (j + 1) & (t->cap - 1);
    }
    PyObject *value = PyLong_FromLongLong(v);
    if (!value || PyList_Append(t->values, value) < 0) {
        Py_XDECREF(value);
        c->fail = 2;
        return -1;
    }
    Py_DECREF(value);
    t->keys[j] = v;
    t->codes[j] = (int32_t)t->used++;
    return t->codes[j];
}

typedef struct {
    Buf phase, ts, dur, pid, tid, pidc, name, cat, arg, meta, flows;
    Py_ssize_t n, entries;
    Interner texts, args;
    PidCodes pids;
    PyObject *fixups;
    int32_t empty_code, null_args;
} ViewColumns;


/* a µs text as us_text_to_ns reads it, for its plain forms ([-]digits[.digits], at most 16 whole digits):
 * 0 with *ns, else -1 (Python reads it) */
static int
us_text_ns(const unsigned char *s, Py_ssize_t n, int64_t *ns)
{
    const unsigned char *p = s, *end = s + n;
    int neg = p < end && *p == '-';
    p += neg;
    const unsigned char *whole = p;
    uint64_t v = 0;
    while (p < end && *p >= '0' && *p <= '9')
        v = v * 10 + (uint64_t)(*p++ - '0');
    if (p == whole || p - whole > 16)
        return -1;
    uint64_t frac = 0, up = 0;
    if (p < end) {
        if (*p++ != '.')
            return -1;
        const unsigned char *f = p;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
        if (p != end)
            return -1;
        Py_ssize_t fn = p - f;
        for (int k = 0; k < 3; k++)
            frac = frac * 10 + (uint64_t)(k < fn ? f[k] - '0' : 0);
        up = fn > 3 && f[3] >= '5';     /* the fourth decimal rounds, the rest are ignored */
    }
    uint64_t mag = v * 1000 + frac + up;      /* v < 10^16: no wrap */
    if (neg ? mag > (uint64_t)INT64_MAX + 1 : mag > (uint64_t)INT64_MAX)
        return -1;
    *ns = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    return 0;
}

/* a time value: where it starts and what the scan made of it */
typedef struct {
    const unsigned char *text, *str;     /* the JSON text; a string's content (unescaped ones only) */
    Py_ssize_t text_n, str_n;
    Number num;
} TimeValue;

/* the value of ts or dur at c->p */
static int
read_time(Cursor *c, TimeValue *v)
{
    v->text = c->p;
    v->str = NULL;
    v->num.kind = 0;
    if (*c->p == '"') {
        const unsigned char *s;
        Py_ssize_t n;
        int esc;
        if (scan_string(c, &s, &n, &esc) < 0)
            return -1;
        if (!esc)
            v->str = s, v->str_n = n;
    }
    else if (*c->p == '{' || *c->p == '[')
        return -1;
    else if (read_number_value(c, &v->num) < 0)
        return -1;
    v->text_n = c->p - v->text;
    return 0;
}

/* the ns of a time value into *ns (0 with a fixup where Python decides) */
static int
time_ns(ViewColumns *out, Cursor *c, const TimeValue *v, int which, int64_t *ns)
{
    *ns = 0;
    if (v->str && us_text_ns(v->str, v->str_n, ns) == 0)
        return 0;
    if (v->num.kind == NUM_INT || v->num.kind == NUM_FLOAT) {
        double x = (v->num.kind == NUM_INT ? (double)v->num.i : v->num.d) * 1000.0;
        if (fabs(x) < 4611686018427387904.0) {     /* 2^62, as us_texts_to_ns_array */
            *ns = (int64_t)nearbyint(x);
            return 0;
        }
    }
    *ns = 0;
    PyObject *item = Py_BuildValue("(niy#)", out->n, which, (const char *)v->text, v->text_n);
    if (!item || PyList_Append(out->fixups, item) < 0) {
        Py_XDECREF(item);
        c->fail = 2;
        return -1;
    }
    Py_DECREF(item);
    return 0;
}

/* the event's JSON text appended to an array's text */
static int
append_event(Buf *b, Cursor *c, const unsigned char *s, Py_ssize_t n)
{
    if (buf_reserve(b, n + 2) < 0) {
        c->fail = 2;
        return -1;
    }
    if (b->len)
        b->data[b->len++] = ',';
    else
        b->data[b->len++] = '[';
    buf_put(b, s, n);
    return 0;
}

/* a string, number or literal (the structs' Any fields: an object or array is declined) */
static inline int
read_scalar(Cursor *c, Number *num)
{
    if (*c->p == '{' || *c->p == '[')
        return -1;
    return read_number_value(c, num);
}

static int
read_view_event(Cursor *c, ViewColumns *out)
{
    if (c->p >= c->end || *c->p != '{')
        return -1;     /* not an object: the structs refuse it */
    const unsigned char *start = c->p;
    int seen = 0, ph = 0;
    const unsigned char *cat = NULL, *name = NULL, *args = NULL;
    Py_ssize_t cat_n = 0, name_n = 0, args_n = 0;
    int cat_esc = 0, name_esc = 0, cat_ok = 1, name_ok = 1;
    Number pid = {0}, tid = {0}, other;
    TimeValue ts = {0}, dur = {0};
    if (!open_container(c, '}')) {
        for (;;) {
            const unsigned char *k;
            Py_ssize_t kn;
            int esc;
            if (read_key(c, &k, &kn, &esc) < 0 || esc || c->p >= c->end)
                return -1;
            int field = event_field(k, kn);
            if (field & seen)
                return -1;     /* given twice */
            seen |= field;
            unsigned char ch = *c->p;
            switch (field) {
            case F_PH:
                if (ch == '"') {
                    const unsigned char *s;
                    Py_ssize_t n;
                    if (scan_string(c, &s, &n, &esc) < 0 || esc)
                        return -1;
                    ph = n == 1 ? s[0] : 0;
                }
                else if (read_scalar(c, &other) < 0)
                    return -1;
                break;
            case F_CAT:
            case F_NAME: {
                const unsigned char *s = NULL;
                Py_ssize_t n = 0;
                int is_str = ch == '"';
                esc = 0;
                if (is_str ? scan_string(c, &s, &n, &esc) < 0 : read_scalar(c, &other) < 0)
                    return -1;
                if (field == F_CAT)   /* null is None, as absent */
                    cat = s, cat_n = n, cat_esc = esc, cat_ok = is_str || ch == 'n';
                else
                    name = s, name_n = n, name_esc = esc, name_ok = is_str;
                break;
            }
            case F_PID:
            case F_TID:
                if (read_scalar(c, field == F_PID ? &pid : &tid) < 0)
                    return -1;
                break;
            case F_TS:
            case F_DUR:
                if (read_time(c, field == F_TS ? &ts : &dur) < 0)
                    return -1;
                break;
            case F_ID:
                if (read_scalar(c, &other) < 0)
                    return -1;
                break;
            case F_ARGS:
                args = c->p;
                if (skip_value(c, 2) < 0)
                    return -1;
                args_n = c->p - args;
                break;
            default:
                if (skip_value(c, 2) < 0)
                    return -1;
            }
            int more = next_item(c, '}');
            if (more < 0)
                return -1;
            if (!more)
                break;
        }
    }
    out->entries++;
    if (ph == 'M')
        return append_event(&out->meta, c, start, c->p - start);
    if (ph == 's' || ph == 'f')
        return append_event(&out->flows, c, start, c->p - start);
    int phase = ph == 'X' ? 0 : ph == 'C' ? 1 : (ph == 'i' || ph == 'I') ? 2 : -1;
    if (phase < 0)
        return 0;      /* not read */
    if (pid.kind != NUM_INT || tid.kind != NUM_INT || !name_ok || !cat_ok || !(seen & F_TS))
        return -1;     /* an odd event: the Python rules read the file */
    int32_t name_code = name ? intern(&out->texts, c, name, name_n, name_esc) : out->empty_code;
    if (name_code < 0)
        return -1;
    int32_t cat_code = cat ? intern(&out->texts, c, cat, cat_n, cat_esc) : -1;
    if (cat && cat_code < 0)
        return -1;
    int32_t arg_code = args ? intern(&out->args, c, args, args_n, 0) : out->null_args;
    if (arg_code < 0)
        return -1;
    int32_t pid_at = pid_code(&out->pids, c, pid.i);
    if (pid_at < 0)
        return -1;
    int64_t t_ns = 0, d_ns = 0;
    if (time_ns(out, c, &ts, 0, &t_ns) < 0)
        return -1;
    if (phase == 0 && (seen & F_DUR) && time_ns(out, c, &dur, 1, &d_ns) < 0)
        return -1;     /* an absent dur is 0 */
    Buf *cols[] = {&out->phase, &out->ts, &out->dur, &out->pid, &out->tid, &out->pidc, &out->name, &out->cat,
                   &out->arg};
    Py_ssize_t sizes[] = {1, 8, 8, 8, 8, 4, 4, 4, 4};
    for (int k = 0; k < 9; k++)
        if (buf_reserve(cols[k], sizes[k]) < 0) {
            c->fail = 2;
            return -1;
        }
    out->phase.data[out->phase.len++] = (char)phase;
    buf_put(&out->ts, &t_ns, 8);
    buf_put(&out->dur, &d_ns, 8);
    buf_put(&out->pid, &pid.i, 8);
    buf_put(&out->tid, &tid.i, 8);
    buf_put(&out->pidc, &pid_at, 4);
    buf_put(&out->name, &name_code, 4);
    buf_put(&out->cat, &cat_code, 4);
    buf_put(&out->arg, &arg_code, 4);
    out->n++;
    return 0;
}

static int
read_view(Cursor *c, ViewColumns *out)
{
    skip_ws(c);
    if (c->p >= c->end || *c->p != '[')
        return -1;
    if (!open_container(c, ']')) {
        for (;;) {
            if (read_view_event(c, out) < 0)
                return -1;
            int more = next_item(c, ']');
            if (more < 0)
                return -1;
            if (!more)
                break;
        }
    }
    skip_ws(c);
    return c->p == c->end ? 0 : -1;
}

static PyObject *
array_text(Buf *b)
{
    if (!b->len)
        return PyBytes_FromString("[]");
    PyObject *text = PyBytes_FromStringAndSize(NULL, b->len + 1);
    if (text) {
        memcpy(PyBytes_AS_STRING(text), b->data, b->len);
        PyBytes_AS_STRING(text)[b->len] = ']';
    }
    return text;
}

/* a ViewColumns' buffers, in the result's order: nine columns, then the meta and the flows texts */
#define VIEW_BUFS(col) {&(col)->phase, &(col)->ts, &(col)->dur, &(col)->pid, &(col)->tid, &(col)->pidc, \
                        &(col)->name, &(col)->cat, &(col)->arg, &(col)->meta, &(col)->flows}

static int
view_prepare(void *cols, Cursor *c)
{
    ViewColumns *col = cols;
    col->args.texts = PyList_New(0);
    col->args.as_bytes = 1;
    col->fixups = PyList_New(0);
    col->pids.values = PyList_New(0);
    if (!col->args.texts || !col->fixups || !col->pids.values)
        return -1;
    col->null_args = intern(&col->args, c, (const unsigned char *)"null", 4, 0);
    return col->null_args < 0 ? -1 : 0;
}

static int
view_read(Cursor *c, void *cols)
{
    return read_view(c, cols);
}

static PyObject *
view_result(void *cols)
{
    ViewColumns *col = cols;
    PyObject *result = NULL;
    Buf *bufs[] = VIEW_BUFS(col);
    PyObject *out[11];
    int made = 1;
    for (int k = 0; k < 9; k++)
        made &= (out[k] = buf_bytes(bufs[k])) != NULL;
    made &= (out[9] = array_text(&col->meta)) != NULL;
    made &= (out[10] = array_text(&col->flows)) != NULL;
    if (made)
        result = Py_BuildValue("(nnOOOOOOOOOOOOOOO)", col->entries, col->n, out[0], out[1], out[2], out[3],
                               out[4], out[5], col->pids.values, out[6], out[7], col->texts.texts, out[8],
                               col->args.texts, col->fixups, out[9], out[10]);
    for (int k = 0; k < 11; k++)
        Py_XDECREF(out[k]);
    return result;
}

static void
view_release(void *cols)
{
    ViewColumns *col = cols;
    Buf *bufs[] = VIEW_BUFS(col);
    for (size_t k = 0; k < sizeof(bufs) / sizeof(bufs[0]); k++)
        PyMem_Free(bufs[k]->data);
    PyMem_Free(col->texts.slots);
    PyMem_Free(col->args.slots);
    PyMem_Free(col->pids.keys);
    PyMem_Free(col->pids.codes);
    Py_XDECREF(col->pids.values);
    Py_XDECREF(col->texts.texts);
    Py_XDECREF(col->args.texts);
    Py_XDECREF(col->fixups);
}

static PyObject *
scan_array(PyObject *Py_UNUSED(self), PyObject *args)
{
    static const ScanKind kind = {"OO:scan_array", view_prepare, view_read, view_result, view_release};
    ViewColumns col;
    memset(&col, 0, sizeof(col));
    return scan_with(args, &kind, &col, &col.texts, &col.empty_code);
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(buffer, decode) -> the complete events of a Kineto trace as columns, or None (see the module doc)"},
    {"scan_array", scan_array, METH_VARARGS,
     "scan_array(buffer, decode) -> the events of a trace_view.json (an event array) as columns, or None"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "npuprof.readers._tracescan",
    "Kineto traces and trace_view.json event arrays scanned into columns (twin of trace_decode's structs).", -1,
    methods};

PyMODINIT_FUNC
PyInit__tracescan(void)
{
    init_tables();
    PyObject *m = PyModule_Create(&module);
#ifdef Py_GIL_DISABLED
    /* as _hotpath and _rowrender: written for and tested under the GIL only, so a free-threaded Python
     * turns the GIL on when it loads; npuprof.compiled leaves it unloaded (the Python twin runs) where the
     * GIL is off */
    if (m != NULL && PyUnstable_Module_SetGIL(m, Py_MOD_GIL_USED) < 0)
        Py_CLEAR(m);
#endif
    return m;
}
