/* npuprof._hotpath: the annotation hot paths of npuprof/recorder.py, compiled.
 *
 * Why: in pure Python, constructing a record_function and running its
 * __enter__/__exit__ costs ~1.4 us on the 2-core bench VM, 6-7x a
 * perf_counter_ns() pair, before any conversion; the same steps here cost
 * 56-78% less per annotation (in a burst, nothing converted). The
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
 * What the Python twins read on every call (the module's _recorder and _enter_hook, the recorder's
 * _plain, domain_filter and _sinks, the buffer thresholds, the thread's buffers in rec._local) is
 * read here once per activation: recorder._activate() hands it over whenever it changes (see
 * Active), and each thread's buffers are cached in thread-local storage. Everything else is the
 * recorder's own: the same per-thread lists, the same dict of open mstx ranges (bind()), the same
 * Python methods (Recorder._register, Recorder.flush_buffers, record_function._record_slow).
 * Appending one event's items runs without releasing the GIL and without running Python code in
 * between, so a buffer's length stays a whole number of events, as ``list += tuple`` guarantees in
 * Python.
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
static PyObject *s_plain, *s_local, *s_b, *s_register, *s_ranges, *s_events, *s_flush_buffers,
    *s_record_slow, *s_domain_filter, *s_sinks, *s_mark, *s_range_start, *s_range_end, *s_same_thread, *s_default;
static PyObject *g_same_thread_kw;   /* ("same_thread",): the keyword names of sinks' range_start calls */

#if defined(_MSC_VER)
#define THREAD_LOCAL __declspec(thread)
#else
#define THREAD_LOCAL _Thread_local
#endif

static long long
now_ns(void)
{
#if PY_VERSION_HEX >= 0x030D0000
    PyTime_t t;
    (void)PyTime_PerfCounterRaw(&t);
    return (long long)t;
#else
    return (long long)_PyTime_GetPerfCounter();   /* what time.perf_counter_ns() returns */
#endif
}

/* -- the active recorder, as the hot paths read it --------------------------------------------------
 *
 * recorder._activate() hands over the active recorder and everything the Python twins read of it
 * and of the module on each call: its _plain flag, domain_filter and _sinks, and the module's
 * _enter_hook, _RANGES_FULL and _EVENTS_FULL. The Python code calls it again whenever one of these
 * changes (a recorder starts, stops or fails, its sinks change, a fork), so a call here reads C
 * fields instead of looking up a module dict and four attributes (dict and attribute lookups were
 * ~1/4 of the samples of an mstx range loop before, perf). */
typedef struct {
    PyObject *rec;           /* NULL: no recorder is active */
    int plain;
    PyObject *filter;        /* rec.domain_filter; NULL when None */
    PyObject *sinks;         /* tuple(rec._sinks) */
    PyObject *enter_hook;    /* recorder._enter_hook; NULL when None */
    Py_ssize_t ranges_full, events_full;
    unsigned long long generation;   /* counts activations; never 0 once one happened */
} Active;

static Active g_active;

/* The calling thread's buffers of the active recorder, borrowed: valid while t_generation equals
 * g_active.generation, since that recorder (held by g_active.rec) keeps each thread's _Buffers in its
 * _threads list, and a _Buffers its lists, for its whole life. A thread that never recorded, or
 * recorded for an earlier activation, has another generation (TLS starts at 0). */
static THREAD_LOCAL unsigned long long t_generation;
static THREAD_LOCAL PyObject *t_bufs, *t_ranges, *t_events;

/* The calling thread's _Buffers of ``rec``, borrowed (the caller holds rec, rec keeps them): cached
 * for the active recorder; the first call of a thread takes rec._local.b, or registers the thread
 * (rec._register()), as the Python twins do. ``rec`` is another recorder only when Python code the
 * caller ran (a filter, a traced function) activated one meanwhile. */
static PyObject *
thread_buffers(PyObject *rec)
{
    if (t_generation == g_active.generation && rec == g_active.rec)
        return t_bufs;
    unsigned long long generation = g_active.generation;
    PyObject *local = PyObject_GetAttr(rec, s_local);
    if (local == NULL)
        return NULL;
    PyObject *bufs = PyObject_GetAttr(local, s_b);
    Py_DECREF(local);
    if (bufs == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return NULL;
        PyErr_Clear();
        if ((bufs = PyObject_CallMethodNoArgs(rec, s_register)) == NULL)
            return NULL;
    }
    PyObject *ranges = PyObject_GetAttr(bufs, s_ranges);
    PyObject *events = ranges == NULL ? NULL : PyObject_GetAttr(bufs, s_events);
    int ok = events != NULL && PyList_Check(ranges) && PyList_Check(events);
    if (events != NULL && !ok)
        PyErr_SetString(PyExc_TypeError, "npuprof: a recorder buffer is not a list");
    /* borrowed from here on: rec keeps bufs, bufs its lists */
    Py_XDECREF(ranges);
    Py_XDECREF(events);
    Py_DECREF(bufs);
    if (!ok)
        return NULL;
    if (generation == g_active.generation && rec == g_active.rec) {   /* _register ran Python code */
        t_bufs = bufs;
        t_ranges = ranges;
        t_events = events;
        t_generation = generation;
    }
    return bufs;
}

/* The list ``name`` (s_ranges or s_events) of the _Buffers ``bufs``, borrowed (bufs keeps it): the
 * cached one when bufs are the calling thread's cached buffers, else read off bufs */
static PyObject *
buffers_list(PyObject *bufs, PyObject *name)
{
    if (bufs == t_bufs && t_generation == g_active.generation)
        return name == s_events ? t_events : t_ranges;
    PyObject *buf = PyObject_GetAttr(bufs, name);
    if (buf == NULL)
        return NULL;
    Py_DECREF(buf);
    return buf;
}

/* The calling thread's list ``name`` of ``rec`` (see thread_buffers), borrowed */
static PyObject *
thread_list(PyObject *rec, PyObject *name)
{
    PyObject *bufs = thread_buffers(rec);
    return bufs == NULL ? NULL : buffers_list(bufs, name);
}

/* Append ``items`` to list ``buf`` (one event), then write the buffer once it holds ``full`` items:
 * ``rec.flush_buffers()``, or ``rec.flush_buffers(bufs)`` for another thread's buffers. */
static int
append_event(PyObject *rec, PyObject *buf, PyObject **items, Py_ssize_t n, Py_ssize_t full, PyObject *bufs)
{
    if (!PyList_Check(buf)) {
        PyErr_SetString(PyExc_TypeError, "npuprof: a recorder buffer is not a list");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (PyList_Append(buf, items[i]) < 0)
            return -1;
    if (PyList_GET_SIZE(buf) >= full) {
        PyObject *r = bufs == NULL ? PyObject_CallMethodNoArgs(rec, s_flush_buffers)
                                   : PyObject_CallMethodOneArg(rec, s_flush_buffers, bufs);
        if (r == NULL)
            return -1;
        Py_DECREF(r);
    }
    return 0;
}

/* activate(rec, enter_hook, ranges_full, events_full): make ``rec`` (None: none) the recorder the hot
 * paths write to, with the module's _enter_hook, _RANGES_FULL and _EVENTS_FULL; reads once what
 * they would otherwise read on every call (see Active). */
static PyObject *
activate(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *rec, *hook;
    Active next = {NULL, 0, NULL, NULL, NULL, 0, 0, 0};
    if (!PyArg_ParseTuple(args, "OOnn:activate", &rec, &hook, &next.ranges_full, &next.events_full))
        return NULL;
    if (rec != Py_None) {
        PyObject *plain = PyObject_GetAttr(rec, s_plain), *filter = NULL, *sinks = NULL;
        if (plain == NULL || (next.plain = PyObject_IsTrue(plain)) < 0
            || (filter = PyObject_GetAttr(rec, s_domain_filter)) == NULL
            || (sinks = PyObject_GetAttr(rec, s_sinks)) == NULL
            || (next.sinks = PySequence_Tuple(sinks)) == NULL) {
            Py_XDECREF(plain);
            Py_XDECREF(filter);
            Py_XDECREF(sinks);
            return NULL;
        }
        Py_DECREF(plain);
        Py_DECREF(sinks);
        next.rec = Py_NewRef(rec);
        next.filter = filter == Py_None ? NULL : filter;
        if (filter == Py_None)
            Py_DECREF(filter);
        next.enter_hook = hook == Py_None ? NULL : Py_NewRef(hook);
    }
    Active old = g_active;
    next.generation = old.generation + 1;
    g_active = next;
    /* released last: a finaliser they run sees the new state */
    Py_XDECREF(old.rec);
    Py_XDECREF(old.filter);
    Py_XDECREF(old.sinks);
    Py_XDECREF(old.enter_hook);
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
    PyObject *hook = g_active.enter_hook;
    if (hook != NULL) {
        Py_INCREF(hook);
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
    PyObject *rec = g_active.rec;
    if (rec == NULL)
        Py_RETURN_FALSE;
    Py_INCREF(rec);
    int ok = -1;
    PyObject *t1o = PyLong_FromLongLong(t1);
    if (t1o == NULL)
        goto done;
    if (g_active.plain && self->args == Py_None) {
        if (self->name == NULL) {   /* never initialised: Python's self.name would raise the same */
            PyErr_SetString(PyExc_AttributeError, "name");
            goto done;
        }
        PyObject *buf = thread_list(rec, s_ranges);
        if (buf == NULL)
            goto done;
        PyObject *t0o = PyLong_FromLongLong(self->t0);
        if (t0o != NULL) {
            PyObject *items[3] = {self->name, t0o, t1o};
            ok = append_event(rec, buf, items, 3, g_active.ranges_full, NULL);
            Py_DECREF(t0o);
        }
    }
    else {
        PyObject *r = PyObject_CallMethodObjArgs((PyObject *)self, s_record_slow, rec, t1o, NULL);
        if (r != NULL) {
            Py_DECREF(r);
            ok = 0;
        }
    }
done:
    Py_XDECREF(t1o);
    Py_DECREF(rec);
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

/* The active recorder and what mstx calls read of it, held for one call (Python code a call runs, a
 * filter or a sink, may activate another) */
typedef struct {
    PyObject *rec, *filter, *sinks;
    Py_ssize_t events_full;
} Held;

static int
hold_active(Held *held)
{
    if (g_active.rec == NULL)
        return 0;
    held->rec = Py_NewRef(g_active.rec);
    held->filter = Py_XNewRef(g_active.filter);
    held->sinks = Py_NewRef(g_active.sinks);
    held->events_full = g_active.events_full;
    return 1;
}

static void
release_held(Held *held)
{
    Py_DECREF(held->rec);
    Py_XDECREF(held->filter);
    Py_DECREF(held->sinks);
}

static const char *const mstx_params[] = {"message", "stream", "domain"};

static PyObject *
mark(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *given[3];
    if (parse_args("mark", mstx_params, 3, 1, args, nargs, kwnames, given) < 0)
        return NULL;
    PyObject *message = given[0], *stream = given[1] ? given[1] : Py_None, *domain = given[2];
    Held held;
    if (!hold_active(&held))
        Py_RETURN_NONE;
    PyObject *dom = domain != NULL ? domain : s_default;
    PyObject *t = NULL;
    int ok = -1;
    int wanted = records_domain(held.filter, dom);
    if (wanted <= 0) {
        ok = wanted;
        goto done;
    }
    PyObject *buf;
    if ((t = PyLong_FromLongLong(now_ns())) == NULL || (buf = thread_list(held.rec, s_events)) == NULL)
        goto done;
    PyObject *items[6] = {g_kind_mark, message, t, t, dom, g_empty};
    if (append_event(held.rec, buf, items, 6, held.events_full, NULL) < 0)
        goto done;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(held.sinks); i++) {
        PyObject *r = PyObject_CallMethodObjArgs(PyTuple_GET_ITEM(held.sinks, i), s_mark, message, stream, NULL);
        if (r == NULL)
            goto done;
        Py_DECREF(r);
    }
    ok = 0;
done:
    Py_XDECREF(t);
    release_held(&held);
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
    Held held;
    if (!hold_active(&held))
        return PyLong_FromLong(0);
    PyObject *dom = domain != NULL ? domain : s_default;
    PyObject *rid = NULL, *tokens = NULL, *t0 = NULL, *opened = NULL, *result = NULL;
    int wanted = records_domain(held.filter, dom);
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
    Py_ssize_t n = PyTuple_GET_SIZE(held.sinks);
    if ((tokens = PyTuple_New(n)) == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *sink = PyTuple_GET_ITEM(held.sinks, i);
        PyObject *call_args[3] = {sink, message, Py_False};
        PyObject *token = PyObject_VectorcallMethod(s_range_start, call_args, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                                    g_same_thread_kw);
        PyObject *pair = token == NULL ? NULL : PyTuple_Pack(2, sink, token);
        Py_XDECREF(token);
        if (pair == NULL)
            goto done;
        PyTuple_SET_ITEM(tokens, i, pair);
    }
    PyObject *bufs = thread_buffers(held.rec);
    if (bufs == NULL || (t0 = PyLong_FromLongLong(now_ns())) == NULL)
        goto done;
    if ((opened = PyTuple_Pack(6, message, t0, dom, held.rec, bufs, tokens)) == NULL)
        goto done;
    if (PyDict_SetItem(g_open_ranges, rid, opened) < 0)
        goto done;
    result = Py_NewRef(rid);
done:
    Py_XDECREF(opened);
    Py_XDECREF(t0);
    Py_XDECREF(tokens);
    Py_XDECREF(rid);
    release_held(&held);
    return result;
}

/* open.pop(key, None): a new reference, NULL with no error when absent */
static PyObject *
pop_item(PyObject *open, PyObject *key)
{
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *value;
    return PyDict_Pop(open, key, &value) < 0 ? NULL : value;
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
    if (!PyTuple_Check(opened) || PyTuple_GET_SIZE(opened) != 6) {
        PyErr_SetString(PyExc_TypeError, "npuprof: an open mstx range is not a 6-tuple");
        goto done;
    }
    PyObject *message = PyTuple_GET_ITEM(opened, 0), *t0 = PyTuple_GET_ITEM(opened, 1),
             *dom = PyTuple_GET_ITEM(opened, 2), *rec = PyTuple_GET_ITEM(opened, 3),
             *bufs = PyTuple_GET_ITEM(opened, 4), *tokens = PyTuple_GET_ITEM(opened, 5);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tokens); i++) {
        PyObject *pair = PyTuple_GET_ITEM(tokens, i);
        PyObject *r = PyObject_CallMethodOneArg(PyTuple_GET_ITEM(pair, 0), s_range_end, PyTuple_GET_ITEM(pair, 1));
        if (r == NULL)
            goto done;
        Py_DECREF(r);
    }
    /* recorded on the thread that started the range; dropped if its window already ended */
    if (rec == g_active.rec) {
        PyObject *buf = buffers_list(bufs, s_events);   /* bufs: the starting thread's */
        if (buf == NULL || (t1o = PyLong_FromLongLong(t1)) == NULL)
            goto done;
        PyObject *items[6] = {g_kind_range, message, t0, t1o, dom, g_empty};
        if (append_event(rec, buf, items, 6, g_active.events_full, bufs) < 0)
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
    PyObject *rec = g_active.rec;
    if (rec == NULL)
        return PyObject_Vectorcall(self->func, args, nargsf, kwnames);
    Py_INCREF(rec);
    Py_ssize_t full = g_active.events_full;
    long long t0 = now_ns();
    PyObject *result = PyObject_Vectorcall(self->func, args, nargsf, kwnames);
    long long t1 = now_ns();
    /* like Python's try/finally: the event is recorded whether the call returned or raised */
    PyObject *exc_type, *exc, *tb;
    PyErr_Fetch(&exc_type, &exc, &tb);
    PyObject *t0o = PyLong_FromLongLong(t0), *t1o = PyLong_FromLongLong(t1), *buf;
    int ok = -1;
    if (t0o != NULL && t1o != NULL && (buf = thread_list(rec, s_events)) != NULL) {
        PyObject *items[6] = {g_kind_api, self->label, t0o, t1o, self->level, g_empty};
        ok = append_event(rec, buf, items, 6, full, NULL);
    }
    Py_XDECREF(t0o);
    Py_XDECREF(t1o);
    Py_DECREF(rec);
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

#ifndef Py_GIL_DISABLED   /* moving a list's items relies on the GIL; without it recorder._drain slices */

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
    {"activate", activate, METH_VARARGS,
     "activate(rec, enter_hook, ranges_full, events_full)\n--\n\nMake rec (None: none) the recorder the hot "
     "paths write to (see recorder._activate)."},
    {"mark", (PyCFunction)(void (*)(void))mark, METH_FASTCALL | METH_KEYWORDS,
     "mark(message, stream=None, domain='default')\n--\n\nmstx.mark (see recorder._mark)."},
    {"range_start", (PyCFunction)(void (*)(void))range_start, METH_FASTCALL | METH_KEYWORDS,
     "range_start(message, stream=None, domain='default')\n--\n\nmstx.range_start (see recorder._range_start)."},
    {"range_end", (PyCFunction)(void (*)(void))range_end, METH_FASTCALL | METH_KEYWORDS,
     "range_end(range_id, domain='default')\n--\n\nmstx.range_end (see recorder._range_end)."},
#ifndef Py_GIL_DISABLED
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
    INTERN(s_plain, "_plain");
    INTERN(s_local, "_local");
    INTERN(s_b, "b");
    INTERN(s_register, "_register");
    INTERN(s_ranges, "ranges");
    INTERN(s_events, "events");
    INTERN(s_flush_buffers, "flush_buffers");
    INTERN(s_record_slow, "_record_slow");
    INTERN(s_domain_filter, "domain_filter");
    INTERN(s_sinks, "_sinks");
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
    if (PyModule_AddObject(m, "RangeBase", Py_NewRef((PyObject *)&RangeType)) < 0
        || PyModule_AddObject(m, "Traced", Py_NewRef((PyObject *)&TracedType)) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
