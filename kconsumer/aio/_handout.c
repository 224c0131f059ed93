/* kconsumer.aio._handout: `RecordRun`, the C form of `kconsumer.aio.handout.PyRecordRun`.
 *
 * `async for message in consumer` hands out one record per step. In Python each step of an
 * asynchronous generator ends by raising StopIteration inside the interpreter, which costs more
 * than the sync consumer's whole `poll()` call. Here a step that takes a buffered record stays
 * in C: `__anext__` pops the record into a reusable `_Ready` awaitable, which completes at once
 * through the `am_send` slot (no exception object). When the run the consumer allowed is
 * used up or the buffer is empty, `__anext__` returns the consumer's `next_record()` coroutine
 * instead, which does the full check (group work, the poll note, the loop's turn) and allows
 * the next run.
 *
 * Thread safety: `stop()` is called from the member's thread; every method runs holding the
 * GIL and none releases it, so a stop is never lost between the check and the pop.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* ---- _Ready: an awaitable that completes at once with one value ----------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *value;  /* owned; NULL once handed over */
    PyObject *buffer; /* owned; where a value never awaited goes back to (its front) */
} Ready;

static PyTypeObject ReadyType;

static Ready *
ready_new(PyObject *value, PyObject *buffer)
{
    Ready *ready = PyObject_GC_New(Ready, &ReadyType);
    if (ready == NULL) {
        Py_XDECREF(value);
        return NULL;
    }
    ready->value = value; /* steals the reference */
    Py_INCREF(buffer);
    ready->buffer = buffer;
    PyObject_GC_Track(ready);
    return ready;
}

static int
ready_traverse(Ready *self, visitproc visit, void *arg)
{
    Py_VISIT(self->value);
    Py_VISIT(self->buffer);
    return 0;
}

static int
ready_clear(Ready *self)
{
    Py_CLEAR(self->value);
    Py_CLEAR(self->buffer);
    return 0;
}

/* Put a record never awaited back at the front of the buffer (-1 with an exception set). */
static int
ready_give_back(Ready *self)
{
    if (self->value == NULL || self->buffer == NULL) {
        return 0;
    }
    PyObject *done = PyObject_CallMethod(self->buffer, "appendleft", "O", self->value);
    if (done == NULL) {
        return -1;
    }
    Py_DECREF(done);
    Py_CLEAR(self->value);
    return 0;
}

/* An awaitable dropped before it was awaited (a task cancelled before its first step, an
 * `anext()` never awaited) gives its record back: nothing is lost. */
static void
ready_dealloc(Ready *self)
{
    PyObject_GC_UnTrack(self);
    if (self->value != NULL) {
        PyObject *type, *error, *traceback;
        PyErr_Fetch(&type, &error, &traceback);
        if (ready_give_back(self) < 0) {
            PyErr_WriteUnraisable((PyObject *)self);
        }
        PyErr_Restore(type, error, traceback);
    }
    ready_clear(self);
    PyObject_GC_Del(self);
}

/* The value, handed over once (None if awaited again). */
static PyObject *
ready_take(Ready *self)
{
    PyObject *value = self->value;
    self->value = NULL;
    if (value == NULL) {
        Py_INCREF(Py_None);
        return Py_None;
    }
    return value;
}

static PyObject *
ready_await(PyObject *self)
{
    Py_INCREF(self);
    return self;
}

static PySendResult
ready_send(PyObject *self, PyObject *Py_UNUSED(arg), PyObject **result)
{
    *result = ready_take((Ready *)self);
    return PYGEN_RETURN;
}

/* For callers that iterate instead of using am_send (a tracer, `yield from`): StopIteration
 * carrying the value, built as an instance so a tuple value stays one argument. */
static PyObject *
ready_next(PyObject *self)
{
    PyObject *value = ready_take((Ready *)self);
    PyObject *stop = PyObject_CallOneArg(PyExc_StopIteration, value);
    Py_DECREF(value);
    if (stop != NULL) {
        PyErr_SetObject(PyExc_StopIteration, stop);
        Py_DECREF(stop);
    }
    return NULL;
}

static PyAsyncMethods ready_as_async = {
    .am_await = ready_await,
    .am_send = ready_send,
};

static PyTypeObject ReadyType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kconsumer.aio._handout._Ready",
    .tp_doc = PyDoc_STR("An awaitable that completes at once with one record."),
    .tp_basicsize = sizeof(Ready),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_dealloc = (destructor)ready_dealloc,
    .tp_traverse = (traverseproc)ready_traverse,
    .tp_clear = (inquiry)ready_clear,
    .tp_as_async = &ready_as_async,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = ready_next,
};

/* ---- RecordRun -------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *buffer;      /* the consumer's record deque */
    PyObject *popleft;     /* buffer.popleft */
    PyObject *next_record; /* the consumer's coroutine function for the full check */
    Ready *ready;          /* reused while nobody else holds it */
    Py_ssize_t remaining;  /* records still allowed in this run */
} RecordRun;

static int
run_init(RecordRun *self, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"buffer", "next_record", NULL};
    PyObject *buffer, *next_record;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:RecordRun", keywords, &buffer,
                                     &next_record)) {
        return -1;
    }
    if (!PyCallable_Check(next_record)) {
        PyErr_SetString(PyExc_TypeError, "RecordRun: next_record must be callable");
        return -1;
    }
    PyObject *popleft = PyObject_GetAttrString(buffer, "popleft");
    if (popleft == NULL) {
        return -1;
    }
    Ready *ready = ready_new(NULL, buffer);
    if (ready == NULL) {
        Py_DECREF(popleft);
        return -1;
    }
    Py_INCREF(buffer);
    Py_INCREF(next_record);
    Py_XSETREF(self->buffer, buffer);
    Py_XSETREF(self->popleft, popleft);
    Py_XSETREF(self->next_record, next_record);
    Py_XSETREF(self->ready, ready);
    self->remaining = 0;
    return 0;
}

static int
run_traverse(RecordRun *self, visitproc visit, void *arg)
{
    Py_VISIT(self->buffer);
    Py_VISIT(self->popleft);
    Py_VISIT(self->next_record);
    Py_VISIT(self->ready);
    return 0;
}

static int
run_clear(RecordRun *self)
{
    Py_CLEAR(self->buffer);
    Py_CLEAR(self->popleft);
    Py_CLEAR(self->next_record);
    Py_CLEAR(self->ready);
    return 0;
}

static void
run_dealloc(RecordRun *self)
{
    PyObject_GC_UnTrack(self);
    run_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
run_aiter(PyObject *self)
{
    Py_INCREF(self);
    return self;
}

static PyObject *
run_anext(RecordRun *self)
{
    if (self->buffer == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "RecordRun was not initialised");
        return NULL;
    }
    Ready *ready = self->ready;
    if (Py_REFCNT(ready) == 1 && ready->value != NULL) {
        /* The last record was never awaited and nobody can any more: it is the next one while
         * the run goes on; after a stop it goes back to the buffer (work the member posted,
         * such as a revocation, sees it there) and the full check comes first. */
        if (self->remaining > 0) {
            Py_INCREF(ready);
            return (PyObject *)ready;
        }
        if (ready_give_back(ready) < 0) {
            return NULL;
        }
    }
    if (self->remaining > 0) {
        Py_ssize_t buffered = PyObject_Length(self->buffer);
        if (buffered < 0) {
            return NULL;
        }
        if (buffered > 0) {
            PyObject *record = PyObject_CallNoArgs(self->popleft);
            if (record == NULL) {
                return NULL;
            }
            self->remaining--;
            if (Py_REFCNT(ready) == 1) {
                ready->value = record;
                Py_INCREF(ready);
                return (PyObject *)ready;
            }
            /* the last awaitable is still held somewhere: a fresh one */
            return (PyObject *)ready_new(record, self->buffer);
        }
    }
    return PyObject_CallNoArgs(self->next_record);
}

static PyObject *
run_allow(RecordRun *self, PyObject *count)
{
    Py_ssize_t n = PyNumber_AsSsize_t(count, PyExc_OverflowError);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    self->remaining = n > 0 ? n : 0;
    Py_RETURN_NONE;
}

static PyObject *
run_stop(RecordRun *self, PyObject *Py_UNUSED(ignored))
{
    self->remaining = 0;
    Py_RETURN_NONE;
}

static PyMethodDef run_methods[] = {
    {"allow", (PyCFunction)run_allow, METH_O,
     PyDoc_STR("allow(count): hand out up to `count` buffered records before the next check.")},
    {"stop", (PyCFunction)run_stop, METH_NOARGS,
     PyDoc_STR("stop(): the next step does the full check (safe from any thread).")},
    {NULL, NULL, 0, NULL},
};

static PyAsyncMethods run_as_async = {
    .am_aiter = run_aiter,
    .am_anext = (unaryfunc)run_anext,
};

static PyTypeObject RecordRunType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kconsumer.aio._handout.RecordRun",
    .tp_doc = PyDoc_STR("RecordRun(buffer, next_record): the asynchronous iterator behind "
                        "`async for` on an AIOConsumer (see kconsumer.aio.handout)."),
    .tp_basicsize = sizeof(RecordRun),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)run_init,
    .tp_dealloc = (destructor)run_dealloc,
    .tp_traverse = (traverseproc)run_traverse,
    .tp_clear = (inquiry)run_clear,
    .tp_as_async = &run_as_async,
    .tp_methods = run_methods,
};

/* ---- the module ------------------------------------------------------------------------- */

static struct PyModuleDef handout_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "kconsumer.aio._handout",
    .m_doc = PyDoc_STR("The C form of kconsumer.aio.handout's record runs."),
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__handout(void)
{
    if (PyType_Ready(&ReadyType) < 0 || PyType_Ready(&RecordRunType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&handout_module);
    if (module == NULL) {
        return NULL;
    }
    Py_INCREF(&RecordRunType);
    if (PyModule_AddObject(module, "RecordRun", (PyObject *)&RecordRunType) < 0) {
        Py_DECREF(&RecordRunType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
