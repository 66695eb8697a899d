/* npuprof.export._rowrender: RowBuilder.render of textrows.py, compiled.
 *
 * Why: the vectorised renderer lays every piece out as a matrix of 4-byte
 * cells and drops the filler in a last pass; at 10M events that was about
 * half of an analysis's CPU (trace_view.json and kernel_details.csv). Here
 * each row is written once, piece after piece, straight into the output.
 * The cell renderer in textrows.py stays the reference and the fallback
 * (this module failed to build, or NPUPROF_PURE_PYTHON=1); both give the same
 * bytes for the same pieces, which tests/performance/test_rowrender.py checks.
 *
 * render(n, pieces) -> bytes. Each piece is a tuple, one of
 *   (0, text: bytes)                              the same text in every row
 *   (1, codes, blob: bytes, offsets, present)     text number codes[i] in row i
 *   (2, values, present)                          str(values[i])
 *   (3, values, present, strip: bool)             thousandths as "int.ddd"
 * where codes, values and present are one-dimensional buffers of n integers
 * (present: booleans, or None for every row); a row whose present is false
 * gets nothing from that piece. A pool's texts are packed: text k is
 * blob[offsets[k]:offsets[k + 1]] (offsets: m + 1 int64), and the blob ends
 * with at least PAD bytes after the last text. With strip, trailing zeros of
 * the fraction are dropped, keeping one digit ("2.5", "7.0"), as
 * repr(round(x / 1000, 3)) prints.
 *
 * Texts are copied PAD bytes at a time (a fixed-size memcpy compiles to two
 * moves): a copy may write up to PAD - 1 bytes past its end, which the next
 * piece overwrites; each row reserves room for its longest form plus PAD.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#if PY_VERSION_HEX < 0x030A0000
static inline PyObject *Py_NewRef(PyObject *o) { Py_INCREF(o); return o; }
#endif

enum { LITERAL = 0, POOLED = 1, INTEGER = 2, FIXED3 = 3 };
enum { PAD = 16, NUMBER_MAX = 26 };   /* "-" + 20 digits + ".ddd", rounded up */

typedef struct {
    int tag;
    int itemsize, is_signed;         /* of values (codes or numbers) */
    const char *values;
    Py_ssize_t stride;
    const char *present;             /* NULL: every row */
    Py_ssize_t present_stride;
    const char *text;                /* LITERAL: a padded copy (owned); POOLED: the blob */
    Py_ssize_t text_len;             /* LITERAL: its length; POOLED: the longest text */
    const int64_t *offsets;          /* POOLED: m + 1 of them */
    Py_ssize_t m;
    PyObject *blob;                  /* POOLED: held while the piece is */
    int strip;
} Piece;

typedef struct {
    Piece *pieces;
    Py_buffer *views;                /* every buffer opened (at most 3 per piece), to release */
    Py_ssize_t n_pieces, n_views;
} Program;

static void
program_release(Program *g)
{
    for (Py_ssize_t j = 0; j < g->n_pieces; j++)
        if (g->pieces[j].tag == LITERAL)
            PyMem_Free((void *)g->pieces[j].text);
        else
            Py_XDECREF(g->pieces[j].blob);
    for (Py_ssize_t v = 0; v < g->n_views; v++)
        PyBuffer_Release(&g->views[v]);
    PyMem_Free(g->pieces);
    PyMem_Free(g->views);
}

/* a one-dimensional buffer of n native integers or booleans */
static Py_buffer *
open_column(Program *g, PyObject *obj, Py_ssize_t n, Py_ssize_t j, const char *what, int *is_signed)
{
    Py_buffer *view = &g->views[g->n_views];
    if (PyObject_GetBuffer(obj, view, PyBUF_STRIDED_RO | PyBUF_FORMAT) < 0)
        return NULL;
    g->n_views++;
    const char *format = view->format ? view->format : "B";
    const char *f = format;
#if PY_LITTLE_ENDIAN
    if (*f == '@' || *f == '=' || *f == '<')
#else
    if (*f == '@' || *f == '=' || *f == '>' || *f == '!')
#endif
        f++;
    if (view->ndim != 1 || view->shape[0] != n) {
        PyErr_Format(PyExc_ValueError, "piece %zd: %s must be one-dimensional with %zd rows", j, what, n);
        return NULL;
    }
    if (!f[0] || f[1] || !strchr("bBhHiIlLqQ?", f[0]) ||
        (view->itemsize != 1 && view->itemsize != 2 && view->itemsize != 4 && view->itemsize != 8)) {
        PyErr_Format(PyExc_TypeError, "piece %zd: %s must hold native integers or booleans, not format '%s'",
                     j, what, format);
        return NULL;
    }
    *is_signed = f[0] >= 'a' && f[0] <= 'z';   /* b h i l q: signed; '?' and the capitals: not */
    return view;
}

static inline int64_t
get(const char *p, int itemsize, int is_signed)
{
    switch (itemsize) {
    case 1: { uint8_t v; memcpy(&v, p, 1); return is_signed ? (int64_t)(int8_t)v : (int64_t)v; }
    case 2: { uint16_t v; memcpy(&v, p, 2); return is_signed ? (int64_t)(int16_t)v : (int64_t)v; }
    case 4: { uint32_t v; memcpy(&v, p, 4); return is_signed ? (int64_t)(int32_t)v : (int64_t)v; }
    default: { int64_t v; memcpy(&v, p, 8); return v; }
    }
}

static int
parse_piece(Program *g, PyObject *spec, Py_ssize_t n, Py_ssize_t j)
{
    static const Py_ssize_t sizes[] = {2, 5, 3, 4};
    Piece *p = &g->pieces[j];
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) < 2) {
        PyErr_Format(PyExc_TypeError, "piece %zd: expected a tuple (tag, ...)", j);
        return -1;
    }
    long tag = PyLong_AsLong(PyTuple_GET_ITEM(spec, 0));
    if (tag == -1 && PyErr_Occurred())
        return -1;
    if (tag < LITERAL || tag > FIXED3 || PyTuple_GET_SIZE(spec) != sizes[tag]) {
        PyErr_Format(PyExc_ValueError, "piece %zd: unknown tag %ld or wrong length %zd", j, tag,
                     PyTuple_GET_SIZE(spec));
        return -1;
    }
    p->tag = (int)tag;
    if (tag == LITERAL) {
        PyObject *text = PyTuple_GET_ITEM(spec, 1);
        if (!PyBytes_Check(text)) {
            PyErr_Format(PyExc_TypeError, "piece %zd: a literal must be bytes", j);
            return -1;
        }
        p->text_len = PyBytes_GET_SIZE(text);
        char *copy = PyMem_Calloc(p->text_len + PAD, 1);
        if (!copy) {
            PyErr_NoMemory();
            return -1;
        }
        memcpy(copy, PyBytes_AS_STRING(text), p->text_len);
        p->text = copy;
        return 0;
    }
    Py_buffer *values = open_column(g, PyTuple_GET_ITEM(spec, 1), n, j, tag == POOLED ? "codes" : "values",
                                    &p->is_signed);
    if (!values)
        return -1;
    p->values = values->buf;
    p->stride = values->strides[0];
    p->itemsize = (int)values->itemsize;
    PyObject *present = PyTuple_GET_ITEM(spec, tag == POOLED ? 4 : 2);
    if (present != Py_None) {
        int unused;
        Py_buffer *mask = open_column(g, present, n, j, "present", &unused);
        if (!mask)
            return -1;
        if (mask->itemsize != 1) {
            PyErr_Format(PyExc_TypeError, "piece %zd: present must hold booleans", j);
            return -1;
        }
        p->present = mask->buf;
        p->present_stride = mask->strides[0];
    }
    if (tag == FIXED3) {
        int strip = PyObject_IsTrue(PyTuple_GET_ITEM(spec, 3));
        if (strip < 0)
            return -1;
        p->strip = strip;
    }
    if (tag != POOLED)
        return 0;
    PyObject *blob = PyTuple_GET_ITEM(spec, 2);
    if (!PyBytes_Check(blob)) {
        PyErr_Format(PyExc_TypeError, "piece %zd: a pool's blob must be bytes", j);
        return -1;
    }
    Py_buffer *offsets = &g->views[g->n_views];
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(spec, 3), offsets, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    g->n_views++;
    const char *f = offsets->format ? offsets->format : "B";
    if (f[0] == '=' || f[0] == '<' || f[0] == '@')
        f++;
    if (offsets->ndim != 1 || offsets->itemsize != 8 || !strchr("lq", f[0]) || f[1] || offsets->shape[0] < 1) {
        PyErr_Format(PyExc_TypeError, "piece %zd: a pool's offsets must be at least one int64", j);
        return -1;
    }
    p->offsets = offsets->buf;
    p->m = offsets->shape[0] - 1;
    p->blob = Py_NewRef(blob);
    p->text = PyBytes_AS_STRING(blob);
    Py_ssize_t longest = 0;
    for (Py_ssize_t k = 0; k < p->m; k++) {
        int64_t len = p->offsets[k + 1] - p->offsets[k];
        if (p->offsets[k] < 0 || len < 0) {
            PyErr_Format(PyExc_ValueError, "piece %zd: a pool's offsets must start >= 0 and never decrease", j);
            return -1;
        }
        if (len > longest)
            longest = (Py_ssize_t)len;
    }
    if (p->offsets[p->m] + PAD > PyBytes_GET_SIZE(blob)) {
        PyErr_Format(PyExc_ValueError, "piece %zd: a pool's blob must hold its texts and %d bytes after them",
                     j, PAD);
        return -1;
    }
    p->text_len = longest;
    return 0;
}

/* The output. CPython's _PyBytes_Resize (private C API) is used only in out_open, out_resize and
 * out_bytes: the rows are written straight into the bytes object returned. A build with
 * -DNPUPROF_PUBLIC_CAPI_ONLY writes them into a PyMem buffer instead and copies it into the bytes
 * object once at the end (tests/platform/test_private_api.py builds and tests it). */
typedef struct {
    PyObject *bytes;                 /* NULL in a public-only build */
    char *buf;
    Py_ssize_t len, cap;
} Out;

static int
out_resize(Out *o, Py_ssize_t cap)
{
#ifdef NPUPROF_PUBLIC_CAPI_ONLY
    char *buf = PyMem_Realloc(o->buf, cap > 0 ? cap : 1);
    if (buf == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    o->buf = buf;
#else
    if (_PyBytes_Resize(&o->bytes, cap) < 0)
        return -1;
    o->buf = PyBytes_AS_STRING(o->bytes);
#endif
    o->cap = cap;
    return 0;
}

static int
out_open(Out *o, Py_ssize_t cap)
{
#ifdef NPUPROF_PUBLIC_CAPI_ONLY
    return out_resize(o, cap);
#else
    if ((o->bytes = PyBytes_FromStringAndSize(NULL, cap)) == NULL)
        return -1;
    o->buf = PyBytes_AS_STRING(o->bytes);
    o->cap = cap;
    return 0;
#endif
}

/* the bytes written, as a new reference; the output is closed either way */
static PyObject *
out_bytes(Out *o)
{
#ifdef NPUPROF_PUBLIC_CAPI_ONLY
    PyObject *b = PyBytes_FromStringAndSize(o->buf, o->len);
    PyMem_Free(o->buf);
    o->buf = NULL;
    return b;
#else
    if (o->len != o->cap && _PyBytes_Resize(&o->bytes, o->len) < 0)
        return NULL;   /* _PyBytes_Resize released it */
    PyObject *b = o->bytes;
    o->bytes = NULL;
    return b;
#endif
}

static void
out_close(Out *o)
{
#ifdef NPUPROF_PUBLIC_CAPI_ONLY
    PyMem_Free(o->buf);
    o->buf = NULL;
#else
    Py_CLEAR(o->bytes);
#endif
}

static int
out_reserve(Out *o, Py_ssize_t more)
{
    if (o->len + more <= o->cap)
        return 0;
    Py_ssize_t cap = o->cap * 2;
    if (cap < o->len + more)
        cap = o->len + more;
    return out_resize(o, cap);
}

static const char DIGIT_PAIRS[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* v < 10^8 in exactly 8 digits */
static inline void
put8(char *dst, uint32_t v)
{
    uint32_t hi = v / 10000, lo = v % 10000;
    memcpy(dst, DIGIT_PAIRS + hi / 100 % 100 * 2, 2);   /* % 100: a no-op the compiler cannot prove */
    memcpy(dst + 2, DIGIT_PAIRS + hi % 100 * 2, 2);
    memcpy(dst + 4, DIGIT_PAIRS + lo / 100 * 2, 2);
    memcpy(dst + 6, DIGIT_PAIRS + lo % 100 * 2, 2);
}

/* v < 10^8 without leading zeros; returns the count */
static inline int
put_short(char *dst, uint32_t v)
{
    int k = v < 10 ? 1 : v < 100 ? 2 : v < 1000 ? 3 : v < 10000 ? 4 : v < 100000 ? 5 : v < 1000000 ? 6
          : v < 10000000 ? 7 : 8;
    char *p = dst + k;
    while (v >= 100) {
        p -= 2;
        memcpy(p, DIGIT_PAIRS + v % 100 * 2, 2);
        v /= 100;
    }
    if (v >= 10) {
        p -= 2;
        memcpy(p, DIGIT_PAIRS + v * 2, 2);
    } else {
        *--p = (char)('0' + v);
    }
    return k;
}

/* decimal digits of v at dst, in 8-digit parts of 32-bit arithmetic; returns the count (at most 20) */
static inline int
put_uint(char *dst, uint64_t v)
{
    if (v < 100000000u)
        return put_short(dst, (uint32_t)v);
    uint64_t high = v / 100000000u;
    uint32_t low = (uint32_t)(v - high * 100000000u);
    int k;
    if (high < 100000000u) {
        k = put_short(dst, (uint32_t)high);
    } else {
        uint64_t top = high / 100000000u;   /* < 1845 */
        k = put_short(dst, (uint32_t)top);
        put8(dst + k, (uint32_t)(high - top * 100000000u));
        k += 8;
    }
    put8(dst + k, low);
    return k + 8;
}

static inline int
put_int(char *dst, int64_t v)
{
    if (v >= 0)
        return put_uint(dst, (uint64_t)v);
    dst[0] = '-';
    return 1 + put_uint(dst + 1, (uint64_t)0 - (uint64_t)v);
}

static inline int
put_fixed3(char *dst, int64_t v, int strip)
{
    int k = 0;
    uint64_t mag = (uint64_t)v;
    if (v < 0) {
        dst[k++] = '-';
        mag = (uint64_t)0 - (uint64_t)v;
    }
    k += put_uint(dst + k, mag / 1000);
    unsigned r = (unsigned)(mag % 1000);
    dst[k] = '.';
    dst[k + 1] = (char)('0' + r / 100);
    dst[k + 2] = (char)('0' + r / 10 % 10);
    dst[k + 3] = (char)('0' + r % 10);
    if (!strip)
        return k + 4;
    return k + (r % 100 == 0 ? 2 : r % 10 == 0 ? 3 : 4);
}

static inline char *
copy_padded(char *dst, const char *src, Py_ssize_t len)
{
    for (Py_ssize_t k = 0; k < len; k += PAD)
        memcpy(dst + k, src + k, PAD);
    return dst + len;
}

/* the rows; -1 with an exception set (a code out of range, or no memory) */
static int
render_rows(const Program *g, Py_ssize_t n, Out *o)
{
    Py_ssize_t row_max = PAD;
    for (Py_ssize_t j = 0; j < g->n_pieces; j++)
        row_max += g->pieces[j].tag <= POOLED ? g->pieces[j].text_len : NUMBER_MAX;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (out_reserve(o, row_max) < 0)
            return -1;
        char *d = o->buf + o->len;
        for (Py_ssize_t j = 0; j < g->n_pieces; j++) {
            const Piece *p = &g->pieces[j];
            if (p->tag == LITERAL) {
                d = copy_padded(d, p->text, p->text_len);
                continue;
            }
            if (p->present && !p->present[i * p->present_stride])
                continue;
            int64_t v = get(p->values + i * p->stride, p->itemsize, p->is_signed);
            if (p->tag == POOLED) {
                if (v < 0 || v >= p->m) {
                    PyErr_Format(PyExc_IndexError, "piece %zd: code %lld is out of range for %zd texts", j,
                                 (long long)v, p->m);
                    return -1;
                }
                d = copy_padded(d, p->text + p->offsets[v], (Py_ssize_t)(p->offsets[v + 1] - p->offsets[v]));
            } else if (p->tag == INTEGER) {
                d += put_int(d, v);
            } else {
                d += put_fixed3(d, v, p->strip);
            }
        }
        o->len = d - o->buf;
    }
    return 0;
}

static PyObject *
render(PyObject *module, PyObject *args)
{
    (void)module;
    Py_ssize_t n;
    PyObject *specs;
    if (!PyArg_ParseTuple(args, "nO!:render", &n, &PyList_Type, &specs))
        return NULL;
    if (n < 0)
        return PyErr_Format(PyExc_ValueError, "n must be >= 0, not %zd", n);
    Py_ssize_t k = PyList_GET_SIZE(specs);
    Program g = {PyMem_Calloc(k + 1, sizeof(Piece)), PyMem_Calloc(3 * k + 1, sizeof(Py_buffer)), 0, 0};
    Out o = {NULL, NULL, 0, 0};
    if (!g.pieces || !g.views) {
        PyErr_NoMemory();
        goto fail;
    }
    Py_ssize_t row_guess = PAD;
    for (Py_ssize_t j = 0; j < k; j++) {
        g.n_pieces = j + 1;   /* released on failure, however far it got */
        if (parse_piece(&g, PyList_GET_ITEM(specs, j), n, j) < 0)
            goto fail;
        row_guess += g.pieces[j].tag == LITERAL ? g.pieces[j].text_len : 8;
    }
    if (out_open(&o, n * row_guess) < 0 || render_rows(&g, n, &o) < 0)
        goto fail;
    program_release(&g);
    return out_bytes(&o);
fail:
    program_release(&g);
    out_close(&o);
    return NULL;
}

static PyMethodDef methods[] = {
    {"render", render, METH_VARARGS,
     "render(n, pieces) -> bytes: n rows of pieces (see the module's C source for the piece tuples)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "npuprof.export._rowrender",
    "RowBuilder.render of npuprof.export.textrows, compiled (the Python one is the reference).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__rowrender(void)
{
#ifdef NPUPROF_PUBLIC_CAPI_ONLY
    int public_only = 1;
#else
    int public_only = 0;
#endif
    PyObject *m = PyModule_Create(&module);
#ifdef Py_GIL_DISABLED
    /* written for and tested under the GIL only: a free-threaded Python turns the GIL on when it loads;
     * npuprof.compiled leaves it unloaded (the Python twin runs) where the GIL is off */
    if (m != NULL && PyUnstable_Module_SetGIL(m, Py_MOD_GIL_USED) < 0)
        Py_CLEAR(m);
#endif
    if (m != NULL && PyModule_AddIntConstant(m, "PUBLIC_CAPI_ONLY", public_only) < 0)
        Py_CLEAR(m);
    return m;
}
