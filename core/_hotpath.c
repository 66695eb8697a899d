/* npuprof._hotpath: the annotation hot paths of npuprof/recorder.py, compiled.
 *
 * Why: in pure Python, constructing a record_function and running its
 * __enter__/__exit__ costs several times a perf_counter_ns() pair before any
 * conversion; done here, the same steps cost a fraction of that (make bench's
 * annotations rows give the current figures, compiled and fallback). The
 * pure-Python code in recorder.py stays the reference and the fallback
 * (this module failed to build, or NPUPROF_PURE_PYTHON=1); each
 * function below does exactly what its Python twin does, in the same order:
 *
 *   RangeBase  <-> _PyRange (record_function's enter/exit)
 *   mark       <-> _mark
 *   range_start / range_end <-> _range_start / _range_end
 *   Traced     <-> the wrapper trace_api builds
 *   drain      <-> _drain's list slicing (the recording thread's conversion)
 *   times      <-> the numpy path of _times (the same)
 *
 * The interface is narrow and explicit: Python hands over what the hot paths use, as arguments
 * (see _hotpath.pyi). bind() gives the event kinds, the dict of open mstx ranges and the iterator of
 * range ids; activate() gives the active recorder (an opaque object, compared and held, never looked
 * into), whether it is plain, its domain filter and sinks, the buffer thresholds, and three
 * callables: thread_buffers() -> (bufs, ranges, events) of the calling thread (registering it),
 * flush_buffers(bufs=None), and record_slow(range, rec, t1) for a range that is not plain. The C code
 * reads no attribute of the recorder or its buffers by name; the only names it calls are the sinks'
 * public interface (mark, range_start, range_end). What the Python twins read on every call is
 * read here once per activation (see Active), and each thread's buffers are cached in thread-local
 * storage. Appending one event's items runs without releasing the GIL and without running Python
 * code in between, so a buffer's length stays a whole number of events, as ``list += tuple``
 * guarantees in Python.
 *
 * CPython's private C API: each use sits in one function with a public fallback, which a build with
 * -DNPUPROF_PUBLIC_CAPI_ONLY takes everywhere (tests/platform/test_private_api.py builds and tests it):
 *   now_ns    _PyTime_GetPerfCounter (< 3.13; 3.13 has the public PyTime_PerfCounterRaw);
 *             fallback clock_gettime(CLOCK_MONOTONIC), the clock time.perf_counter_ns() reads on
 *             Linux and the other POSIX systems but macOS
 *   pop_item  _PyDict_Pop (< 3.13; 3.13 has PyDict_Pop); fallback PyDict_GetItemWithError + DelItem
 *   drain     moves a list's item array (PyListObject's fields); not built without the GIL or in a
 *             public-only build: recorder._drain then slices
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#if PY_VERSION_HEX < 0x030A0000
static inline PyObject *Py_NewRef(PyObject *o) { Py_INCREF(o); return o; }
static inline PyObject *Py_XNewRef(PyObject *o) { Py_XINCREF(o); return o; }
#endif

static PyObject *g_kind_range, *g_kind_mark, *g_kind_api, *g_empty;
static PyObject *g_open_ranges;      /* recorder._open_ranges: range id -> the open mstx range */
static PyObject *g_range_ids;        /* recorder._range_ids: the iterator of range ids */
/* the sinks' public interface (Recorder.sinks) and the default domain */
static PyObject *s_mark, *s_range_start, *s_range_end, *s_same_thread, *s_default;
static PyObject *g_same_thread_kw;   /* ("same_thread",): the keyword names of sinks' range_start calls */

#if defined(_MSC_VER)
#define THREAD_LOCAL __declspec(thread)
#else
#define THREAD_LOCAL _Thread_local
#endif

#if PY_VERSION_HEX < 0x030D0000 && defined(NPUPROF_PUBLIC_CAPI_ONLY)
#include <time.h>
#if !defined(CLOCK_MONOTONIC) || defined(__APPLE__)
#error "NPUPROF_PUBLIC_CAPI_ONLY before Python 3.13 needs CLOCK_MONOTONIC, the clock of time.perf_counter_ns()"
#endif
#endif

/* what time.perf_counter_ns() returns */
static long long
now_ns(void)
{
#if PY_VERSION_HEX >= 0x030D0000
    PyTime_t t;
    (void)PyTime_PerfCounterRaw(&t);
    return (long long)t;
#elif defined(NPUPROF_PUBLIC_CAPI_ONLY)
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
#else
    return (long long)_PyTime_GetPerfCounter();
#endif
}

/* -- the active recorder, as the hot paths read it --------------------------------------------------
 *
 * recorder._activate() hands over the active recorder and everything the Python twins read of it
 * and of the module on each call (see activate() below). The Python code calls it again whenever one
 * of these changes (a recorder starts, stops or fails, its sinks change, a fork), so a call here reads
 * C fields instead of looking up a module dict and four attributes (dict and attribute lookups were
 * ~1/4 of the samples of an mstx range loop before, perf).
 *
 * One activation is one Active, counted: g_active holds one count, and a call holds one while it
 * runs (Python code it runs, a filter, a sink, a traced function, may activate another recorder:
 * the call goes on with what it read at its start, as a Python twin does with the recorder it read).
 * The counts are changed under the GIL only: the module declares it needs the GIL (Py_MOD_GIL_USED),
 * so a free-threaded Python turns the GIL on when it loads; npuprof.compiled leaves it unloaded (the
 * Python twins run) where the GIL is off. */
typedef struct {
    Py_ssize_t holders;
    PyObject *rec;              /* only compared and held, never looked into */
    int plain;
    PyObject *filter;           /* the domain filter; NULL when None */
    PyObject *sinks;            /* a tuple */
    PyObject *enter_hook;       /* NULL when None */
    PyObject *thread_buffers;   /* () -> (bufs, ranges, events) of the calling thread */
    PyObject *flush_buffers;    /* (bufs=None) -> written */
    PyObject *record_slow;      /* (range, rec, t1) */
    Py_ssize_t ranges_full, events_full;
    unsigned long long generation;   /* counts activations, from 1 */
} Active;

static Active *g_active;            /* NULL: no recorder is active */
static unsigned long long g_generations;

static inline Active *
active_hold(void)
{
    Active *a = g_active;
    if (a != NULL)
        a->holders++;
    return a;
}

static void
active_drop(Active *a)
{
    if (--a->holders > 0)
        return;
    Py_XDECREF(a->rec);
    Py_XDECREF(a->filter);
    Py_XDECREF(a->sinks);
    Py_XDECREF(a->enter_hook);
    Py_XDECREF(a->thread_buffers);
    Py_XDECREF(a->flush_buffers);
    Py_XDECREF(a->record_slow);
    PyMem_Free(a);
}

/* The calling thread's buffers of one activation, borrowed: valid while t_generation is that
 * activation's and it is held, since its recorder keeps each thread's buffers for its whole life (the
 * contract of thread_buffers, see _hotpath.pyi). A thread that never recorded, or recorded for an
 * earlier activation, has another generation (TLS starts at 0). */
static THREAD_LOCAL unsigned long long t_generation;
static THREAD_LOCAL PyObject *t_bufs, *t_ranges, *t_events;

/* The calling thread's buffers of activation ``a`` (held by the caller): cached, or asked of
 * a->thread_buffers() once per thread and activation. Fills bufs, ranges, events (borrowed);
 * 0, or -1 on error. */
static int
thread_buffers(Active *a, PyObject **bufs, PyObject **ranges, PyObject **events)
{
    if (t_generation != a->generation) {
        PyObject *got = PyObject_CallNoArgs(a->thread_buffers);
        if (got == NULL)
            return -1;
        int ok = PyTuple_Check(got) && PyTuple_GET_SIZE(got) == 3 && PyList_Check(PyTuple_GET_ITEM(got, 1))
                 && PyList_Check(PyTuple_GET_ITEM(got, 2));
        if (ok) {   /* borrowed from here on: the recorder keeps them (it is held by a) */
            t_bufs = PyTuple_GET_ITEM(got, 0);
            t_ranges = PyTuple_GET_ITEM(got, 1);
            t_events = PyTuple_GET_ITEM(got, 2);
            t_generation = a->generation;
        }
        Py_DECREF(got);
        if (!ok) {
            PyErr_SetString(PyExc_TypeError, "npuprof: thread_buffers() must return (bufs, ranges: list, events: list)");
            return -1;
        }
    }
    *bufs = t_bufs;
    *ranges = t_ranges;
    *events = t_events;
    return 0;
}

/* Append ``items`` to list ``buf`` (one event), then write the buffer once it holds ``full`` items:
 * ``flush()``, or ``flush(bufs)`` for another thread's buffers (the caller holds flush). */
static int
append_event(PyObject *flush, PyObject *buf, PyObject **items, Py_ssize_t n, Py_ssize_t full, PyObject *bufs)
{
    for (Py_ssize_t i = 0; i < n; i++)
        if (PyList_Append(buf, items[i]) < 0)
            return -1;
    if (PyList_GET_SIZE(buf) >= full) {
        PyObject *r = bufs == NULL ? PyObject_CallNoArgs(flush) : PyObject_CallOneArg(flush, bufs);
        if (r == NULL)
            return -1;
        Py_DECREF(r);
    }
    return 0;
}

/* activate(rec, plain, domain_filter, sinks, enter_hook, ranges_full, events_full, thread_buffers,
 * flush_buffers, record_slow), or activate(None): make ``rec`` the recorder the hot paths write to (see
 * _hotpath.pyi); reads once what the Python twins read on every call (see Active). */
static PyObject *
activate(PyObject *Py_UNUSED(module), PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"rec", "plain", "domain_filter", "sinks", "enter_hook", "ranges_full", "events_full",
                             "thread_buffers", "flush_buffers", "record_slow", NULL};
    PyObject *rec, *filter = Py_None, *sinks = NULL, *hook = Py_None, *thread_bufs = NULL, *flush = NULL,
             *slow = NULL;
    int plain = 0;
    Py_ssize_t ranges_full = 0, events_full = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|pOOOnnOOO:activate", kwlist, &rec, &plain, &filter, &sinks,
                                     &hook, &ranges_full, &events_full, &thread_bufs, &flush, &slow))
        return NULL;
    Active *next = NULL;
    if (rec != Py_None) {
        if (sinks == NULL || thread_bufs == NULL || flush == NULL || slow == NULL || ranges_full <= 0
            || events_full <= 0) {
            PyErr_SetString(PyExc_TypeError, "activate(rec, ...) takes every argument, the thresholds > 0, when "
                                             "rec is not None");
            return NULL;
        }
        if (!PyCallable_Check(thread_bufs) || !PyCallable_Check(flush) || !PyCallable_Check(slow)
            || (filter != Py_None && !PyCallable_Check(filter)) || (hook != Py_None && !PyCallable_Check(hook))) {
            PyErr_SetString(PyExc_TypeError, "activate(): domain_filter and enter_hook must be callables or None; "
                                             "thread_buffers, flush_buffers and record_slow callables");
            return NULL;
        }
        PyObject *sink_tuple = PySequence_Tuple(sinks);
        if (sink_tuple == NULL)
            return NULL;
        if ((next = PyMem_Calloc(1, sizeof(Active))) == NULL) {
            Py_DECREF(sink_tuple);
            return PyErr_NoMemory();
        }
        next->holders = 1;
        next->rec = Py_NewRef(rec);
        next->plain = plain;
        next->filter = filter == Py_None ? NULL : Py_NewRef(filter);
        next->sinks = sink_tuple;
        next->enter_hook = hook == Py_None ? NULL : Py_NewRef(hook);
        next->thread_buffers = Py_NewRef(thread_bufs);
        next->flush_buffers = Py_NewRef(flush);
        next->record_slow = Py_NewRef(slow);
        next->ranges_full = ranges_full;
        next->events_full = events_full;
        next->generation = ++g_generations;
    }
    Active *old = g_active;
    g_active = next;
    if (old != NULL)
        active_drop(old);   /* dropped last: a finaliser it runs sees the new state */
    Py_RETURN_NONE;
}

/* Arguments of a METH_FASTCALL | METH_KEYWORDS call into ``out`` (borrowed; NULL when not given):
 * ``names`` lists the parameters, the first ``required`` of them mandatory. What
 * PyArg_ParseTupleAndKeywords does, without building an argument tuple per call. */
static int
parse_args(const char *func, const char *const *names, int count, int required, PyObject *const *args,
           Py_ssize_t nargs, PyObject *kwnames, PyObject **out)
{
    if (nargs > count) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most %d arguments (%zd given)", func, count, nargs);
        return -1;
    }
    for (int i = 0; i < count; i++)
        out[i] = i < nargs ? args[i] : NULL;
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        int i = 0;
        while (i < count && PyUnicode_CompareWithASCIIString(key, names[i]) != 0)
            i++;
        if (i == count) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", func, key);
            return -1;
        }
        if (out[i] != NULL) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", func, names[i]);
            return -1;
        }
        out[i] = args[nargs + k];
    }
    for (int i = 0; i < required; i++)
        if (out[i] == NULL) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", func, names[i]);
            return -1;
        }
    return 0;
}

/* -- RangeBase: record_function's construction, __enter__ and __exit__ ----------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *name;
    PyObject *args;
    long long t0;
    PyObject *stack;
    PyObject *sink_ids;
} Range;

static int
Range_init(Range *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"name", "args", NULL};
    PyObject *name, *rargs = Py_None;
    if (kwds == NULL && PyTuple_GET_SIZE(args) == 1)   /* record_function("name"): the common call, parsed fast */
        name = PyTuple_GET_ITEM(args, 0);
    else if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|O:record_function", kwlist, &name, &rargs))
        return -1;
    Py_INCREF(name);
    Py_XSETREF(self->name, name);
    Py_INCREF(rargs);
    Py_XSETREF(self->args, rargs);
    return 0;
}

static int
Range_traverse(Range *self, visitproc visit, void *arg)
{
    Py_VISIT(self->name);
    Py_VISIT(self->args);
    Py_VISIT(self->stack);
    Py_VISIT(self->sink_ids);
    return 0;
}

static int
Range_clear(Range *self)
{
    Py_CLEAR(self->name);
    Py_CLEAR(self->args);
    Py_CLEAR(self->stack);
    Py_CLEAR(self->sink_ids);
    return 0;
}

static void
Range_dealloc(Range *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Range_clear(self);
    tp->tp_free((PyObject *)self);
}

static PyObject *
Range_enter(Range *self, PyObject *Py_UNUSED(ignored))
{
    if (g_active != NULL && g_active->enter_hook != NULL) {
        PyObject *hook = Py_NewRef(g_active->enter_hook);
        PyObject *r = PyObject_CallOneArg(hook, (PyObject *)self);
        Py_DECREF(hook);
        if (r == NULL)
            return NULL;
        Py_DECREF(r);
    }
    self->t0 = now_ns();
    Py_INCREF(self);
    return (PyObject *)self;
}

static PyObject *
Range_exit(Range *self, PyObject *const *Py_UNUSED(args), Py_ssize_t Py_UNUSED(nargs))
{
    long long t1 = now_ns();
    Active *a = active_hold();
    if (a == NULL)
        Py_RETURN_FALSE;
    int ok = -1;
    PyObject *t1o = PyLong_FromLongLong(t1);
    if (t1o == NULL)
        goto done;
    if (a->plain && self->args == Py_None) {
        if (self->name == NULL) {   /* never initialised: Python's self.name would raise the same */
            PyErr_SetString(PyExc_AttributeError, "name");
            goto done;
        }
        PyObject *bufs, *ranges, *events;
        if (thread_buffers(a, &bufs, &ranges, &events) < 0)
            goto done;
        PyObject *t0o = PyLong_FromLongLong(self->t0);
        if (t0o != NULL) {
            PyObject *items[3] = {self->name, t0o, t1o};
            ok = append_event(a->flush_buffers, ranges, items, 3, a->ranges_full, NULL);
            Py_DECREF(t0o);
        }
    }
    else {
        PyObject *call_args[3] = {(PyObject *)self, a->rec, t1o};
        PyObject *r = PyObject_Vectorcall(a->record_slow, call_args, 3, NULL);
        if (r != NULL) {
            Py_DECREF(r);
            ok = 0;
        }
    }
done:
    Py_XDECREF(t1o);
    active_drop(a);
    if (ok < 0)
        return NULL;
    Py_RETURN_FALSE;
}

static PyMethodDef Range_methods[] = {
    {"__enter__", (PyCFunction)Range_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))Range_exit, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef Range_members[] = {
    {"name", T_OBJECT_EX, offsetof(Range, name), 0, NULL},
    {"args", T_OBJECT_EX, offsetof(Range, args), 0, NULL},
    {"_t0", T_LONGLONG, offsetof(Range, t0), 0, NULL},
    {"_stack", T_OBJECT_EX, offsetof(Range, stack), 0, NULL},
    {"_sink_ids", T_OBJECT_EX, offsetof(Range, sink_ids), 0, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject RangeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "npuprof._hotpath.RangeBase",
    .tp_doc = "record_function's construction, __enter__ and __exit__ (see recorder._PyRange).",
    .tp_basicsize = sizeof(Range),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Range_init,
    .tp_dealloc = (destructor)Range_dealloc,
    .tp_traverse = (traverseproc)Range_traverse,
    .tp_clear = (inquiry)Range_clear,
    .tp_methods = Range_methods,
    .tp_members = Range_members,
};

/* -- mstx.mark / range_start / range_end -------------------------------------------------------- */

/* Whether the active recorder, whose domain_filter is ``filter`` (NULL: None), records ``domain``:
 * 1, 0, or -1 on error. */
static int
records_domain(PyObject *filter, PyObject *domain)
{
    if (filter == NULL)
        return 1;
    PyObject *r = PyObject_CallOneArg(filter, domain);
    if (r == NULL)
        return -1;
    int truth = PyObject_IsTrue(r);
    Py_DECREF(r);
    return truth;
}

static const char *const mstx_params[] = {"message", "stream", "domain"};

static PyObject *
mark(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *given[3];
    if (parse_args("mark", mstx_params, 3, 1, args, nargs, kwnames, given) < 0)
        return NULL;
    PyObject *message = given[0], *stream = given[1] ? given[1] : Py_None, *domain = given[2];
    Active *a = active_hold();
    if (a == NULL)
        Py_RETURN_NONE;
    PyObject *dom = domain != NULL ? domain : s_default;
    PyObject *t = NULL;
    int ok = -1;
    int wanted = records_domain(a->filter, dom);
    if (wanted <= 0) {
        ok = wanted;
        goto done;
    }
    PyObject *bufs, *ranges, *events;
    if ((t = PyLong_FromLongLong(now_ns())) == NULL || thread_buffers(a, &bufs, &ranges, &events) < 0)
        goto done;
    PyObject *items[6] = {g_kind_mark, message, t, t, dom, g_empty};
    if (append_event(a->flush_buffers, events, items, 6, a->events_full, NULL) < 0)
        goto done;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(a->sinks); i++) {
        PyObject *r = PyObject_CallMethodObjArgs(PyTuple_GET_ITEM(a->sinks, i), s_mark, message, stream, NULL);
        if (r == NULL)
            goto done;
        Py_DECREF(r);
    }
    ok = 0;
done:
    Py_XDECREF(t);
    active_drop(a);
    if (ok < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
range_start(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *given[3];
    if (parse_args("range_start", mstx_params, 3, 1, args, nargs, kwnames, given) < 0)
        return NULL;
    PyObject *message = given[0], *domain = given[2];
    Active *a = active_hold();
    if (a == NULL)
        return PyLong_FromLong(0);
    PyObject *dom = domain != NULL ? domain : s_default;
    PyObject *rid = NULL, *tokens = NULL, *t0 = NULL, *opened = NULL, *result = NULL;
    int wanted = records_domain(a->filter, dom);
    if (wanted < 0)
        goto done;
    if (!wanted) {
        result = PyLong_FromLong(0);
        goto done;
    }
    if (g_range_ids == NULL || g_open_ranges == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "npuprof._hotpath is not bound to the recorder");
        goto done;
    }
    if ((rid = PyIter_Next(g_range_ids)) == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "npuprof: range ids ran out");
        goto done;
    }
    /* mstx ranges may end on another thread: sinks use start/stop ranges, not push/pop */
    Py_ssize_t n = PyTuple_GET_SIZE(a->sinks);
    if ((tokens = PyTuple_New(n)) == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *sink = PyTuple_GET_ITEM(a->sinks, i);
        PyObject *call_args[3] = {sink, message, Py_False};
        PyObject *token = PyObject_VectorcallMethod(s_range_start, call_args, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                                    g_same_thread_kw);
        PyObject *pair = token == NULL ? NULL : PyTuple_Pack(2, sink, token);
        Py_XDECREF(token);
        if (pair == NULL)
            goto done;
        PyTuple_SET_ITEM(tokens, i, pair);
    }
    PyObject *bufs, *ranges, *events;
    if (thread_buffers(a, &bufs, &ranges, &events) < 0 || (t0 = PyLong_FromLongLong(now_ns())) == NULL)
        goto done;
    if ((opened = PyTuple_Pack(7, message, t0, dom, a->rec, bufs, events, tokens)) == NULL)
        goto done;
    if (PyDict_SetItem(g_open_ranges, rid, opened) < 0)
        goto done;
    result = Py_NewRef(rid);
done:
    Py_XDECREF(opened);
    Py_XDECREF(t0);
    Py_XDECREF(tokens);
    Py_XDECREF(rid);
    active_drop(a);
    return result;
}

/* open.pop(key, None): a new reference, NULL with no error when absent */
static PyObject *
pop_item(PyObject *open, PyObject *key)
{
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *value;
    return PyDict_Pop(open, key, &value) < 0 ? NULL : value;
#elif defined(NPUPROF_PUBLIC_CAPI_ONLY)
    PyObject *value = PyDict_GetItemWithError(open, key);   /* borrowed */
    if (value == NULL)
        return NULL;
    Py_INCREF(value);
    if (PyDict_DelItem(open, key) < 0) {
        Py_DECREF(value);
        return NULL;
    }
    return value;
#else
    PyObject *value = _PyDict_Pop(open, key, Py_None);
    if (value == Py_None) {
        Py_DECREF(value);
        return NULL;
    }
    return value;
#endif
}

static PyObject *
range_end(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const params[] = {"range_id", "domain"};
    long long t1 = now_ns();
    PyObject *given[2];
    if (parse_args("range_end", params, 2, 1, args, nargs, kwnames, given) < 0)
        return NULL;
    if (g_open_ranges == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "npuprof._hotpath is not bound to the recorder");
        return NULL;
    }
    PyObject *opened = pop_item(g_open_ranges, given[0]);
    if (opened == NULL) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    PyObject *t1o = NULL;
    int ok = -1;
    if (!PyTuple_Check(opened) || PyTuple_GET_SIZE(opened) != 7 || !PyList_Check(PyTuple_GET_ITEM(opened, 5))
        || !PyTuple_Check(PyTuple_GET_ITEM(opened, 6))) {
        PyErr_SetString(PyExc_TypeError, "npuprof: an open mstx range is not a 7-tuple (..., events: list, tokens)");
        goto done;
    }
    PyObject *message = PyTuple_GET_ITEM(opened, 0), *t0 = PyTuple_GET_ITEM(opened, 1),
             *dom = PyTuple_GET_ITEM(opened, 2), *rec = PyTuple_GET_ITEM(opened, 3),
             *bufs = PyTuple_GET_ITEM(opened, 4), *events = PyTuple_GET_ITEM(opened, 5),
             *tokens = PyTuple_GET_ITEM(opened, 6);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tokens); i++) {
        PyObject *pair = PyTuple_GET_ITEM(tokens, i);
        PyObject *r = PyObject_CallMethodOneArg(PyTuple_GET_ITEM(pair, 0), s_range_end, PyTuple_GET_ITEM(pair, 1));
        if (r == NULL)
            goto done;
        Py_DECREF(r);
    }
    /* recorded on the thread that started the range; dropped if its window already ended */
    if (g_active != NULL && rec == g_active->rec) {   /* bufs, events: the starting thread's */
        if ((t1o = PyLong_FromLongLong(t1)) == NULL)
            goto done;
        Active *a = active_hold();
        PyObject *items[6] = {g_kind_range, message, t0, t1o, dom, g_empty};
        int appended = append_event(a->flush_buffers, events, items, 6, a->events_full, bufs);
        active_drop(a);
        if (appended < 0)
            goto done;
    }
    ok = 0;
done:
    Py_XDECREF(t1o);
    Py_DECREF(opened);
    if (ok < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* -- Traced: the callable trace_api returns ------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *func;
    PyObject *label;
    PyObject *level;
    PyObject *dict;
    vectorcallfunc vectorcall;
} Traced;

static PyObject *
Traced_vectorcall(Traced *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (g_active == NULL)
        return PyObject_Vectorcall(self->func, args, nargsf, kwnames);
    Active *a = active_hold();
    long long t0 = now_ns();
    PyObject *result = PyObject_Vectorcall(self->func, args, nargsf, kwnames);
    long long t1 = now_ns();
    /* like Python's try/finally: the event is recorded whether the call returned or raised */
    PyObject *exc_type, *exc, *tb;
    PyErr_Fetch(&exc_type, &exc, &tb);
    PyObject *t0o = PyLong_FromLongLong(t0), *t1o = PyLong_FromLongLong(t1), *bufs, *ranges, *events;
    int ok = -1;
    if (t0o != NULL && t1o != NULL && thread_buffers(a, &bufs, &ranges, &events) == 0) {
        PyObject *items[6] = {g_kind_api, self->label, t0o, t1o, self->level, g_empty};
        ok = append_event(a->flush_buffers, events, items, 6, a->events_full, NULL);
    }
    Py_XDECREF(t0o);
    Py_XDECREF(t1o);
    active_drop(a);
    if (ok < 0) {   /* an error while recording replaces the call's outcome, as in Python's finally */
        Py_XDECREF(exc_type);
        Py_XDECREF(exc);
        Py_XDECREF(tb);
        Py_XDECREF(result);
        return NULL;
    }
    PyErr_Restore(exc_type, exc, tb);
    return result;
}

static PyObject *
Traced_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"func", "label", "level", NULL};
    PyObject *func, *label, *level;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO:Traced", kwlist, &func, &label, &level))
        return NULL;
    Traced *self = (Traced *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->func = Py_NewRef(func);
    self->label = Py_NewRef(label);
    self->level = Py_NewRef(level);
    self->vectorcall = (vectorcallfunc)Traced_vectorcall;
    return (PyObject *)self;
}

static int
Traced_traverse(Traced *self, visitproc visit, void *arg)
{
    Py_VISIT(self->func);
    Py_VISIT(self->label);
    Py_VISIT(self->level);
    Py_VISIT(self->dict);
    return 0;
}

static int
Traced_clear(Traced *self)
{
    Py_CLEAR(self->func);
    Py_CLEAR(self->label);
    Py_CLEAR(self->level);
    Py_CLEAR(self->dict);
    return 0;
}

static void
Traced_dealloc(Traced *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Traced_clear(self);
    tp->tp_free((PyObject *)self);
}

static PyObject *
Traced_get(PyObject *self, PyObject *obj, PyObject *Py_UNUSED(type))
{
    if (obj == NULL || obj == Py_None)
        return Py_NewRef(self);
    return PyMethod_New(self, obj);   /* a method of the class it decorates, like the function it wraps */
}

/* pickled by reference, as the function it wraps would be (functools.update_wrapper set __qualname__) */
static PyObject *
Traced_reduce(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    return PyObject_GetAttrString(self, "__qualname__");
}

static PyMethodDef Traced_methods[] = {
    {"__reduce__", Traced_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Traced_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject TracedType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "npuprof._hotpath.Traced",
    .tp_doc = "A callable timing every call of func as an API event (see recorder.trace_api).",
    .tp_basicsize = sizeof(Traced),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = Traced_new,
    .tp_dealloc = (destructor)Traced_dealloc,
    .tp_traverse = (traverseproc)Traced_traverse,
    .tp_clear = (inquiry)Traced_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Traced, vectorcall),
    .tp_descr_get = Traced_get,
    .tp_dictoffset = offsetof(Traced, dict),
    .tp_methods = Traced_methods,
    .tp_getset = Traced_getset,
};

/* -- bind ------------------------------------------------------------------------------------------ */

static PyObject *
bind(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *kind_range, *kind_mark, *kind_api, *open_ranges, *range_ids;
    if (!PyArg_ParseTuple(args, "OOOO!O:bind", &kind_range, &kind_mark, &kind_api, &PyDict_Type, &open_ranges,
                          &range_ids))
        return NULL;
    Py_XSETREF(g_kind_range, Py_NewRef(kind_range));
    Py_XSETREF(g_kind_mark, Py_NewRef(kind_mark));
    Py_XSETREF(g_kind_api, Py_NewRef(kind_api));
    Py_XSETREF(g_open_ranges, Py_NewRef(open_ranges));
    Py_XSETREF(g_range_ids, Py_NewRef(range_ids));
    Py_RETURN_NONE;
}

/* -- draining a buffer ------------------------------------------------------------------------------ */

/* moving a list's items relies on the GIL and on PyListObject's fields; without either recorder._drain slices */
#if !defined(Py_GIL_DISABLED) && !defined(NPUPROF_PUBLIC_CAPI_ONLY)
#define HAVE_DRAIN 1

/* drain(buf, n): the first n items of list ``buf`` (0 <= n <= len(buf)) as a new list, removed from
 * ``buf``. What recorder._drain's ``chunk = buf[:n]; del buf[:n]`` does, without touching the items:
 * the references move (a copy and a delete take and drop one each, reading every item's memory:
 * ~10 ns per item at 30,000 events), and a whole buffer hands over its item array. */
static PyObject *
drain(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyList_CheckExact(args[0])) {
        PyErr_SetString(PyExc_TypeError, "drain(buf, n) takes a list and an int");
        return NULL;
    }
    PyListObject *buf = (PyListObject *)args[0];
    Py_ssize_t n = PyLong_AsSsize_t(args[1]), size = Py_SIZE(buf);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    if (n < 0 || n > size) {
        PyErr_Format(PyExc_ValueError, "drain: n=%zd is not within the buffer's %zd items", n, size);
        return NULL;
    }
    PyListObject *out = (PyListObject *)PyList_New(0);
    if (out == NULL || n == 0)
        return (PyObject *)out;
    if (n == size) {
        out->ob_item = buf->ob_item;
        out->allocated = buf->allocated;
        buf->ob_item = NULL;
        buf->allocated = 0;
    }
    else {
        PyObject **items = PyMem_New(PyObject *, n);
        if (items == NULL) {
            Py_DECREF(out);
            return PyErr_NoMemory();
        }
        memcpy(items, buf->ob_item, n * sizeof(PyObject *));
        memmove(buf->ob_item, buf->ob_item + n, (size - n) * sizeof(PyObject *));
        out->ob_item = items;
        out->allocated = n;
    }
    Py_SET_SIZE(out, n);
    Py_SET_SIZE(buf, size - n);
    return (PyObject *)out;
}
#endif

/* -- the recording thread's conversion ---------------------------------------------------------- */

/* PyLong_AsLong where long is 64 bits: up to 3.11, PyLong_AsLongLong converts any int of more than
 * one 30-bit digit (every nanosecond timestamp) through a byte array, ~5x slower */
static inline long long
as_int64(PyObject *v)
{
#if LONG_MAX == LLONG_MAX
    return PyLong_AsLong(v);
#else
    return PyLong_AsLongLong(v);
#endif
}

/* times(flat, width, first, offset, ts, dur): the start and duration columns of the n = len(flat) // width
 * events of a drained buffer (see recorder.py): ts[i] = flat[first + i * width] + offset and
 * dur[i] = flat[first + 1 + i * width] - flat[first + i * width], written into two C-contiguous int64
 * buffers of n items. What chunks_to_table's two np.fromiter over list slices do (~23 ns per item
 * there: an iterator step and a generic conversion each), in one pass. TypeError for an item that
 * is not exactly an int; the caller then takes the numpy path, as it does when this is not built. */
static PyObject *
times(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_Format(PyExc_TypeError, "times() takes 6 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *flat = args[0];
    if (!PyList_Check(flat)) {
        PyErr_SetString(PyExc_TypeError, "times(): flat must be a list");
        return NULL;
    }
    Py_ssize_t width = PyLong_AsSsize_t(args[1]), first = PyLong_AsSsize_t(args[2]);
    long long offset = PyLong_AsLongLong(args[3]);
    if (PyErr_Occurred())
        return NULL;
    if (width < 2 || first < 0 || first + 1 >= width) {
        PyErr_Format(PyExc_ValueError, "times(): first %zd and first + 1 must be within width %zd", first, width);
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(flat) / width;
    Py_buffer ts, dur;
    if (PyObject_GetBuffer(args[4], &ts, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[5], &dur, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&ts);
        return NULL;
    }
    PyObject *result = NULL;
    if (ts.len != n * (Py_ssize_t)sizeof(long long) || dur.len != n * (Py_ssize_t)sizeof(long long)) {
        PyErr_Format(PyExc_ValueError, "times(): ts and dur must hold %zd int64 items", n);
        goto done;
    }
    long long *t = (long long *)ts.buf, *d = (long long *)dur.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = PyList_GET_ITEM(flat, first + i * width), *b = PyList_GET_ITEM(flat, first + 1 + i * width);
        if (!PyLong_CheckExact(a) || !PyLong_CheckExact(b)) {
            PyErr_Format(PyExc_TypeError, "times(): item %zd is not an int", first + i * width);
            goto done;
        }
        long long x = as_int64(a), y = as_int64(b);
        if ((x == -1 || y == -1) && PyErr_Occurred())
            goto done;
        t[i] = (long long)((unsigned long long)x + (unsigned long long)offset);   /* wraps as numpy's += */
        d[i] = (long long)((unsigned long long)y - (unsigned long long)x);
    }
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&dur);
    PyBuffer_Release(&ts);
    return result;
}

static PyMethodDef module_methods[] = {
    {"bind", bind, METH_VARARGS,
     "bind(kind_range, kind_mark, kind_api, open_ranges, range_ids): the recorder's event kinds, its dict of "
     "open mstx ranges and its iterator of range ids."},
    {"activate", (PyCFunction)(void (*)(void))activate, METH_VARARGS | METH_KEYWORDS,
     "activate(rec, plain=False, domain_filter=None, sinks=(), enter_hook=None, ranges_full=0, events_full=0, "
     "thread_buffers=None, flush_buffers=None, record_slow=None)\n--\n\nMake rec (None: none) the recorder the "
     "hot paths write to, with everything they use of it (see _hotpath.pyi and recorder._activate)."},
    {"mark", (PyCFunction)(void (*)(void))mark, METH_FASTCALL | METH_KEYWORDS,
     "mark(message, stream=None, domain='default')\n--\n\nmstx.mark (see recorder._mark)."},
    {"range_start", (PyCFunction)(void (*)(void))range_start, METH_FASTCALL | METH_KEYWORDS,
     "range_start(message, stream=None, domain='default')\n--\n\nmstx.range_start (see recorder._range_start)."},
    {"range_end", (PyCFunction)(void (*)(void))range_end, METH_FASTCALL | METH_KEYWORDS,
     "range_end(range_id, domain='default')\n--\n\nmstx.range_end (see recorder._range_end)."},
#ifdef HAVE_DRAIN
    {"drain", (PyCFunction)(void (*)(void))drain, METH_FASTCALL,
     "drain(buf, n)\n--\n\nThe first n items of list buf, moved to a new list (see recorder._drain)."},
#endif
    {"times", (PyCFunction)(void (*)(void))times, METH_FASTCALL,
     "times(flat, width, first, offset, ts, dur)\n--\n\nStart and duration columns of a drained buffer "
     "(see recorder._times)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef hotpath_module = {
    PyModuleDef_HEAD_INIT, "npuprof._hotpath", "The annotation hot paths of npuprof.recorder, compiled.", -1,
    module_methods,
};

#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL

PyMODINIT_FUNC
PyInit__hotpath(void)
{
    INTERN(s_mark, "mark");
    INTERN(s_range_start, "range_start");
    INTERN(s_range_end, "range_end");
    INTERN(s_same_thread, "same_thread");
    if ((g_same_thread_kw = PyTuple_Pack(1, s_same_thread)) == NULL)
        return NULL;
    INTERN(s_default, "default");
    INTERN(g_empty, "");
    if (PyType_Ready(&RangeType) < 0 || PyType_Ready(&TracedType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&hotpath_module);
    if (m == NULL)
        return NULL;
#ifdef NPUPROF_PUBLIC_CAPI_ONLY
    int public_only = 1;
#else
    int public_only = 0;
#endif
#ifdef Py_GIL_DISABLED
    /* the counts above (and list internals) need the GIL: a free-threaded Python turns it on when this
     * loads; npuprof.compiled does not load it while the GIL is off, so that npuprof never turns it on */
    if (PyUnstable_Module_SetGIL(m, Py_MOD_GIL_USED) < 0) {
        Py_DECREF(m);
        return NULL;
    }
#endif
    if (PyModule_AddIntConstant(m, "PUBLIC_CAPI_ONLY", public_only) < 0
        || PyModule_AddObject(m, "RangeBase", Py_NewRef((PyObject *)&RangeType)) < 0
        || PyModule_AddObject(m, "Traced", Py_NewRef((PyObject *)&TracedType)) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
