/* The two loops of a search by meaning that numpy makes several passes for (bits.py).
 *
 * hamming(out, words, query, at=None): out[i] = the Hamming distance from query (4 uint64) to
 *     column at[i] (or i) of words ((4, n) uint64, rows of 8-byte items).
 * scores(out, words, table, at=None, mask=None): out[i] = the sum over the 32 bytes of column
 *     at[i] (or i) of words (each word ANDed with the same column of mask, when given) of
 *     table[place][byte], place 0 being the first (most significant) byte of the first word;
 *     added in float32 place after place, as numpy adds them (the same bits).
 *
 * Both read each chunk once (numpy's passes write and read temporaries four times a word) and
 * let go of the GIL. The Hamming loop is built three ways, picked once by what the CPU has: with
 * AVX-512's population count (the compiler vectorises it), with the POPCNT instruction, plain.
 * The module is optional: without a C compiler the package is built without it and bits.py
 * does the same sums with numpy.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#define WORDS 4
#define PLACES (WORDS * 8)

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define ENGRAM_X86_DISPATCH 1
#endif

#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
static inline int popcount64(uint64_t x) {
#if defined(_M_X64)
    return (int)__popcnt64(x);
#else
    return (int)(__popcnt((unsigned int)x) + __popcnt((unsigned int)(x >> 32)));
#endif
}
#else
#define popcount64(x) __builtin_popcountll(x)
#endif

/* words: (WORDS, n) with a row stride of `row` items; at: NULL for 0..m-1. */
#define HAMMING_BODY                                                                         \
    {                                                                                        \
        const uint64_t *w0 = words, *w1 = words + row, *w2 = words + 2 * row,               \
                       *w3 = words + 3 * row;                                                \
        const uint64_t a = q[0], b = q[1], c = q[2], d = q[3];                               \
        if (at == NULL) {                                                                    \
            for (Py_ssize_t i = 0; i < m; i++)                                               \
                out[i] = (uint16_t)(popcount64(w0[i] ^ a) + popcount64(w1[i] ^ b) +          \
                                    popcount64(w2[i] ^ c) + popcount64(w3[i] ^ d));          \
        } else {                                                                             \
            for (Py_ssize_t i = 0; i < m; i++) {                                             \
                const Py_ssize_t j = at[i];                                                  \
                out[i] = (uint16_t)(popcount64(w0[j] ^ a) + popcount64(w1[j] ^ b) +          \
                                    popcount64(w2[j] ^ c) + popcount64(w3[j] ^ d));          \
            }                                                                                \
        }                                                                                    \
    }

#define HAMMING_ARGS                                                                         \
    (const uint64_t *words, Py_ssize_t row, const uint64_t *q, const Py_ssize_t *at,         \
     Py_ssize_t m, uint16_t *out)

typedef void(*hamming_fn) HAMMING_ARGS;

static void hamming_plain HAMMING_ARGS HAMMING_BODY

#ifdef ENGRAM_X86_DISPATCH
__attribute__((target("popcnt"))) static void hamming_popcnt HAMMING_ARGS HAMMING_BODY

__attribute__((target("avx512f,avx512bw,avx512vl,avx512vpopcntdq,popcnt")))
static void hamming_avx512 HAMMING_ARGS HAMMING_BODY
#endif

static hamming_fn hamming_impl = hamming_plain;
static const char *hamming_kind = "plain";

static void pick_hamming(void) {
#ifdef ENGRAM_X86_DISPATCH
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512vpopcntdq") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl")) {
        hamming_impl = hamming_avx512;
        hamming_kind = "avx512";
    } else if (__builtin_cpu_supports("popcnt")) {
        hamming_impl = hamming_popcnt;
        hamming_kind = "popcnt";
    }
#endif
}

/* A (WORDS, n) table of uint64 whose items lie side by side in a row: its first item and the
 * items from one row to the next. */
static int words_of(Py_buffer *view, const char *what, Py_ssize_t *n, Py_ssize_t *row) {
    if (view->itemsize != 8 || view->ndim != 2 || view->shape[0] != WORDS ||
        view->strides[1] != 8 || view->strides[0] % 8 != 0 || view->strides[0] < 0) {
        PyErr_Format(PyExc_ValueError, "%s: a (4, n) array of uint64 with its rows' items side by side", what);
        return -1;
    }
    *n = view->shape[1];
    *row = view->strides[0] / 8;
    return 0;
}

/* ``at``: a contiguous array of intp whose every item is a column of a table of n. */
static int columns_of(Py_buffer *view, Py_ssize_t n, Py_ssize_t *m) {
    if (view->itemsize != (Py_ssize_t)sizeof(Py_ssize_t) || view->ndim != 1) {
        PyErr_SetString(PyExc_ValueError, "at: a contiguous array of intp");
        return -1;
    }
    const Py_ssize_t *at = (const Py_ssize_t *)view->buf;
    *m = view->shape[0];
    for (Py_ssize_t i = 0; i < *m; i++) {
        if (at[i] < 0 || at[i] >= n) {
            PyErr_Format(PyExc_IndexError, "at: column %zd of a table of %zd", at[i], n);
            return -1;
        }
    }
    return 0;
}

static int out_of(Py_buffer *view, Py_ssize_t itemsize, Py_ssize_t m, const char *what) {
    if (view->itemsize != itemsize || view->ndim != 1 || view->shape[0] != m) {
        PyErr_Format(PyExc_ValueError, "out: a contiguous array of %zd %s", m, what);
        return -1;
    }
    return 0;
}

/* ``obj`` as a (WORDS, n) table of uint64 (``words_of``). */
static int get_words(PyObject *obj, Py_buffer *view, const char *what, Py_ssize_t *n,
                     Py_ssize_t *row) {
    if (PyObject_GetBuffer(obj, view, PyBUF_STRIDED_RO | PyBUF_FORMAT) < 0) return -1;
    return words_of(view, what, n, row);
}

/* The columns ``at_o`` of a table of n (None: every one, ``at`` left empty), and ``out_o``, as
 * many items of ``itemsize`` as there are columns: their number in ``m``. */
static int get_columns_and_out(PyObject *at_o, PyObject *out_o, Py_ssize_t n,
                               Py_ssize_t itemsize, const char *what, Py_buffer *at,
                               Py_buffer *out, Py_ssize_t *m) {
    *m = n;
    if (at_o != Py_None) {
        if (PyObject_GetBuffer(at_o, at, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
        if (columns_of(at, n, m) < 0) return -1;
    }
    if (PyObject_GetBuffer(out_o, out, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE | PyBUF_FORMAT) < 0)
        return -1;
    return out_of(out, itemsize, *m, what);
}

static void release(Py_buffer *views, int count) {
    for (int i = 0; i < count; i++)
        if (views[i].obj) PyBuffer_Release(&views[i]);
}

/* The buffers a call holds, released together (a query for hamming, a table for scores). */
enum { OUT, WORDS_VIEW, AT, QUERY, TABLE = QUERY, MASK, VIEWS };

static PyObject *hamming(PyObject *Py_UNUSED(self), PyObject *args, PyObject *kwargs) {
    static char *names[] = {"out", "words", "query", "at", NULL};
    PyObject *out_o, *words_o, *query_o, *at_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|O:hamming", names, &out_o, &words_o,
                                     &query_o, &at_o))
        return NULL;
    Py_buffer v[VIEWS] = {{0}};
    PyObject *result = NULL;
    Py_ssize_t n, row, m;
    if (get_words(words_o, &v[WORDS_VIEW], "words", &n, &row) < 0) goto done;
    if (PyObject_GetBuffer(query_o, &v[QUERY], PyBUF_C_CONTIGUOUS) < 0) goto done;
    if (v[QUERY].len != WORDS * 8) {
        PyErr_SetString(PyExc_ValueError, "query: 4 uint64");
        goto done;
    }
    if (get_columns_and_out(at_o, out_o, n, 2, "uint16", &v[AT], &v[OUT], &m) < 0) goto done;
    Py_BEGIN_ALLOW_THREADS
    hamming_impl((const uint64_t *)v[WORDS_VIEW].buf, row, (const uint64_t *)v[QUERY].buf,
                 v[AT].obj ? (const Py_ssize_t *)v[AT].buf : NULL, m, (uint16_t *)v[OUT].buf);
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    release(v, VIEWS);
    return result;
}

static void scores_loop(const uint64_t *words, Py_ssize_t row, const uint64_t *mask,
                        Py_ssize_t mask_row, const float *table, const Py_ssize_t *at,
                        Py_ssize_t m, float *out) {
    for (Py_ssize_t i = 0; i < m; i++) {
        const Py_ssize_t j = at ? at[i] : i;
        float s = 0.0f;
        for (int w = 0; w < WORDS; w++) {
            uint64_t x = words[w * row + j];
            if (mask) x &= mask[w * mask_row + j];
            const float *t = table + (Py_ssize_t)w * 8 * 256;
            for (int b = 0; b < 8; b++) {
                s += t[b * 256 + (int)((x >> (56 - 8 * b)) & 0xff)];
            }
        }
        out[i] = s;
    }
}

static PyObject *scores(PyObject *Py_UNUSED(self), PyObject *args, PyObject *kwargs) {
    static char *names[] = {"out", "words", "table", "at", "mask", NULL};
    PyObject *out_o, *words_o, *table_o, *at_o = Py_None, *mask_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|OO:scores", names, &out_o, &words_o,
                                     &table_o, &at_o, &mask_o))
        return NULL;
    Py_buffer v[VIEWS] = {{0}};
    PyObject *result = NULL;
    Py_ssize_t n, row, m, mask_n = 0, mask_row = 0;
    if (get_words(words_o, &v[WORDS_VIEW], "words", &n, &row) < 0) goto done;
    if (mask_o != Py_None) {
        if (get_words(mask_o, &v[MASK], "mask", &mask_n, &mask_row) < 0) goto done;
        if (mask_n != n) {
            PyErr_SetString(PyExc_ValueError, "mask: as many columns as words");
            goto done;
        }
    }
    if (PyObject_GetBuffer(table_o, &v[TABLE], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) goto done;
    if (v[TABLE].itemsize != 4 || v[TABLE].len != PLACES * 256 * 4) {
        PyErr_SetString(PyExc_ValueError, "table: 32 x 256 float32");
        goto done;
    }
    if (get_columns_and_out(at_o, out_o, n, 4, "float32", &v[AT], &v[OUT], &m) < 0) goto done;
    Py_BEGIN_ALLOW_THREADS
    scores_loop((const uint64_t *)v[WORDS_VIEW].buf, row,
                v[MASK].obj ? (const uint64_t *)v[MASK].buf : NULL, mask_row,
                (const float *)v[TABLE].buf, v[AT].obj ? (const Py_ssize_t *)v[AT].buf : NULL,
                m, (float *)v[OUT].buf);
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    release(v, VIEWS);
    return result;
}

static PyMethodDef methods[] = {
    {"hamming", (PyCFunction)(void (*)(void))hamming, METH_VARARGS | METH_KEYWORDS,
     "hamming(out, words, query, at=None): Hamming distances into out (uint16)."},
    {"scores", (PyCFunction)(void (*)(void))scores, METH_VARARGS | METH_KEYWORDS,
     "scores(out, words, table, at=None, mask=None): byte-table sums into out (float32)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_kernels", "The hot loops of a search by meaning.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__kernels(void) {
    pick_hamming();
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddStringConstant(m, "HAMMING", hamming_kind) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
