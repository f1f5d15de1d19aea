/* hhrlhf._jsonl: parse a block of HH-RLHF JSONL lines into (chosen, rejected, prompt end).
 *
 * The optional native half of hhrlhf.fastload. One call takes a block of complete lines and
 * gives back the lists the loader builds records from. It does three things per line:
 *
 *   1. parse {"chosen": "...", "rejected": "..."} and unescape both strings into one output
 *      buffer, with the GIL released (so another thread can inflate or build meanwhile);
 *   2. align the pair on the unescaped UTF-8 bytes with the two-search fast path of
 *      hhrlhf.transcript.prompt_length (a byte offset, turned into a code point offset);
 *   3. with the GIL held again, make the str objects and the lists.
 *
 * It never decides anything unusual itself. It accepts only what it fully understands: every
 * non-blank line is one JSON object whose keys are exactly "chosen" and "rejected" (each once,
 * in any order) with string values, surrounded by JSON whitespace. Anything else (an invalid
 * line, another key or value type, a lone surrogate, invalid UTF-8, ...) returns None, and the
 * Python caller reads the file again with the reference reader, which names the problem. A
 * pair whose alignment is not the common case gets its prompt end from the Python function
 * passed in (the reference turn walk). So for every block it accepts, the result equals what
 * orjson plus prompt_length give; tests/test_fastload.py checks this on every quirk class.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#define HH_SSE2 1
#endif

/* One parsed pair: where its two unescaped strings lie in the output buffer. */
typedef struct {
    Py_ssize_t c_off, c_len, r_off, r_len;
    Py_ssize_t end;  /* prompt end in code points, or -1: the Python function decides */
    Py_ssize_t line; /* 0-based line number within the block */
    int c_ascii, r_ascii;
} pair_t;

typedef struct {
    const char *p;   /* read position in the input */
    const char *lim; /* end of the input block */
    char *out;       /* write position in the output buffer */
} cursor_t;

static const char HUMAN[] = "\n\nHuman:"; /* 8 bytes */

/* ------------------------------------------------------------------ strings */

static int hexval(unsigned char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* Four hex digits at p (p + 4 <= lim checked by the caller); -1 if not hex. */
static long hex4(const unsigned char *p) {
    long v = 0;
    for (int k = 0; k < 4; k++) {
        int h = hexval(p[k]);
        if (h < 0) return -1;
        v = (v << 4) | h;
    }
    return v;
}

static char *put_utf8(char *o, unsigned long cp) {
    if (cp < 0x80) {
        *o++ = (char)cp;
    } else if (cp < 0x800) {
        *o++ = (char)(0xC0 | (cp >> 6));
        *o++ = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *o++ = (char)(0xE0 | (cp >> 12));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *o++ = (char)(0x80 | (cp & 0x3F));
    } else {
        *o++ = (char)(0xF0 | (cp >> 18));
        *o++ = (char)(0x80 | ((cp >> 12) & 0x3F));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *o++ = (char)(0x80 | (cp & 0x3F));
    }
    return o;
}

/* Parse a JSON string whose opening quote has been consumed; unescape it into c->out.
 * Sets *ascii to 0 if any byte written is >= 0x80. Returns 0 on success, -1 if the text
 * is not a string orjson would accept (raw control character, bad escape, lone surrogate,
 * no closing quote). Raw non-ASCII bytes are copied as they are: their UTF-8 validity is
 * checked when the str is made. */
static int parse_string(cursor_t *c, int *ascii) {
    const unsigned char *p = (const unsigned char *)c->p;
    const unsigned char *lim = (const unsigned char *)c->lim;
    char *o = c->out;
    int non_ascii = 0;
    for (;;) {
#ifdef HH_SSE2
        /* 16 bytes at a time up to the next quote, backslash or control character; the
         * output buffer has 16 bytes of slack for the unconditional store. */
        const __m128i quote = _mm_set1_epi8('"');
        const __m128i bslash = _mm_set1_epi8('\\');
        const __m128i space = _mm_set1_epi8(0x20);
        const __m128i zero = _mm_setzero_si128();
        while (p + 16 <= lim) {
            __m128i x = _mm_loadu_si128((const __m128i *)p);
            __m128i high = _mm_cmplt_epi8(x, zero); /* bytes >= 0x80 */
            __m128i ctrl = _mm_andnot_si128(high, _mm_cmplt_epi8(x, space));
            __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote),
                                                     _mm_cmpeq_epi8(x, bslash)),
                                        ctrl);
            int mask = _mm_movemask_epi8(stop);
            int hmask = _mm_movemask_epi8(high);
            _mm_storeu_si128((__m128i *)o, x);
            if (mask == 0) {
                non_ascii |= hmask;
                p += 16;
                o += 16;
                continue;
            }
            int k = __builtin_ctz((unsigned)mask);
            non_ascii |= hmask & ((1 << k) - 1);
            p += k;
            o += k;
            break;
        }
#endif
        /* byte by byte near the end of the block (or without SSE2) */
        while (p < lim && *p != '"' && *p != '\\' && *p >= 0x20) {
            non_ascii |= *p & 0x80;
            *o++ = (char)*p++;
        }
        if (p >= lim) return -1; /* no closing quote */
        if (*p == '"') {
            c->p = (const char *)(p + 1);
            c->out = o;
            *ascii = !non_ascii;
            return 0;
        }
        if (*p < 0x20) return -1; /* raw control character (a newline included) */
        /* a backslash escape */
        if (p + 1 >= lim) return -1;
        unsigned char e = p[1];
        p += 2;
        switch (e) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            if (p + 4 > lim) return -1;
            long cp = hex4(p);
            if (cp < 0) return -1;
            p += 4;
            if (cp >= 0xDC00 && cp <= 0xDFFF) return -1; /* lone low surrogate */
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (p + 6 > lim || p[0] != '\\' || p[1] != 'u') return -1;
                long lo = hex4(p + 2);
                if (lo < 0xDC00 || lo > 0xDFFF) return -1;
                p += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (cp >= 0x80) non_ascii = 1;
            o = put_utf8(o, (unsigned long)cp);
            break;
        }
        default:
            return -1;
        }
    }
}

/* ------------------------------------------------------------------ lines */

static const char *skip_ws(const char *p, const char *lim) {
    while (p < lim && (*p == ' ' || *p == '\t' || *p == '\r')) p++;
    return p;
}

/* A line of nothing but the bytes bytes.strip() removes is blank: skipped, still counted. */
static int is_blank(const char *p, const char *eol) {
    for (; p < eol; p++) {
        char ch = *p;
        if (ch != ' ' && ch != '\t' && ch != '\r' && ch != '\x0b' && ch != '\x0c') return 0;
    }
    return 1;
}

/* Parse one object line starting at c->p (the line ends at eol). 0 on success. */
static int parse_line(cursor_t *c, const char *eol, char *base, pair_t *pr) {
    const char *p = skip_ws(c->p, eol);
    int seen_c = 0, seen_r = 0;
    if (p >= eol || *p != '{') return -1;
    p++;
    for (;;) {
        p = skip_ws(p, eol);
        if (p >= eol || *p != '"') return -1;
        p++;
        /* the key, taken raw: only the two expected spellings are accepted */
        int which;
        if (eol - p >= 7 && memcmp(p, "chosen\"", 7) == 0) {
            which = 0;
            p += 7;
        } else if (eol - p >= 9 && memcmp(p, "rejected\"", 9) == 0) {
            which = 1;
            p += 9;
        } else {
            return -1;
        }
        if ((which == 0 && seen_c) || (which == 1 && seen_r)) return -1; /* duplicate key */
        p = skip_ws(p, eol);
        if (p >= eol || *p != ':') return -1;
        p = skip_ws(p + 1, eol);
        if (p >= eol || *p != '"') return -1;
        c->p = p + 1;
        c->lim = eol;
        Py_ssize_t off = c->out - base;
        int ascii;
        if (parse_string(c, &ascii) < 0) return -1;
        if (which == 0) {
            pr->c_off = off;
            pr->c_len = (c->out - base) - off;
            pr->c_ascii = ascii;
            seen_c = 1;
        } else {
            pr->r_off = off;
            pr->r_len = (c->out - base) - off;
            pr->r_ascii = ascii;
            seen_r = 1;
        }
        p = skip_ws(c->p, eol);
        if (p >= eol) return -1;
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p != '}') return -1;
        p = skip_ws(p + 1, eol);
        if (p != eol || !seen_c || !seen_r) return -1;
        c->p = p;
        return 0;
    }
}

/* ------------------------------------------------------------------ alignment */

/* Start of the last "\n\nAssistant:" in s[0:n], or -1: found from its second newline. */
static Py_ssize_t rfind_assistant(const char *s, Py_ssize_t n) {
    Py_ssize_t j = n - 11; /* the second newline leaves room for "Assistant:" after it */
    while (j >= 1) {
#ifdef __GLIBC__
        const char *nl = memrchr(s + 1, '\n', (size_t)j);
        if (nl == NULL) return -1;
        j = nl - s;
#else
        while (j >= 1 && s[j] != '\n') j--;
        if (j < 1) return -1;
#endif
        if (s[j - 1] == '\n' && memcmp(s + j + 1, "Assistant:", 10) == 0) return j - 1;
        j--;
    }
    return -1;
}

/* Whether "\n\nHuman:" occurs in s[from:n]. */
static int has_human(const char *s, Py_ssize_t from, Py_ssize_t n) {
    const char *p = s + from, *lim = s + n;
    while (lim - p >= 8) {
        const char *nl = memchr(p, '\n', (size_t)(lim - p - 7));
        if (nl == NULL) return 0;
        if (memcmp(nl, HUMAN, 8) == 0) return 1;
        p = nl + 1;
    }
    return 0;
}

/* Code points in the first n bytes of valid UTF-8. */
static Py_ssize_t code_points(const char *s, Py_ssize_t n) {
    Py_ssize_t count = 0, k = 0;
#ifdef HH_SSE2
    /* continuation bytes are 0x80..0xBF: as signed bytes, those below (signed) 0xC0 */
    const __m128i c0 = _mm_set1_epi8((char)0xC0);
    for (; k + 16 <= n; k += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(s + k));
        count += 16 - __builtin_popcount((unsigned)_mm_movemask_epi8(_mm_cmplt_epi8(x, c0)));
    }
#endif
    for (; k < n; k++) count += ((unsigned char)s[k] & 0xC0) != 0x80;
    return count;
}

/* The prompt end of the common pair (see hhrlhf.transcript.prompt_length: the last assistant
 * marker at the same place in both, the same text up to it, and no human marker after it),
 * in bytes; -1 for every other pair. Markers are ASCII and UTF-8 is self-synchronising, so
 * these byte searches find exactly what the str searches find. */
static Py_ssize_t align(const char *c, Py_ssize_t cn, const char *r, Py_ssize_t rn) {
    Py_ssize_t i = rfind_assistant(c, cn);
    if (i < 0 || rfind_assistant(r, rn) != i) return -1;
    Py_ssize_t e = i + 12;
    if (has_human(c, e, cn) || has_human(r, e, rn)) return -1;
    if (memcmp(c, r, (size_t)e) != 0) return -1;
    return e;
}

/* ------------------------------------------------------------------ the call */

static PyObject *make_str(const char *s, Py_ssize_t n, int ascii) {
    if (!ascii) return PyUnicode_DecodeUTF8(s, n, "strict");
    PyObject *u = PyUnicode_New(n, 127);
    if (u != NULL) memcpy(PyUnicode_1BYTE_DATA(u), s, (size_t)n);
    return u;
}

PyDoc_STRVAR(parse_block_doc,
"parse_block(data, first, prompt_length) -> (chosen, rejected, ends, indices, lines) | None\n"
"\n"
"Parse JSONL lines of HH-RLHF pairs (the last one may lack its newline). ``first`` is the\n"
"0-based number of the block's first line; ``indices`` gives each pair's line number, blank\n"
"lines skipped but counted; ``lines`` is how many lines the block held.\n"
"``ends`` are prompt ends in code points; pairs outside the common case get\n"
"``prompt_length(chosen, rejected)``. None means the block holds something this parser\n"
"does not vouch for (the caller then uses the reference reader); so does a block with no\n"
"pair at all.");

static PyObject *parse_block(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer view;
    Py_ssize_t first;
    PyObject *slow_align;
    if (!PyArg_ParseTuple(args, "y*nO:parse_block", &view, &first, &slow_align)) return NULL;

    const char *data = view.buf;
    Py_ssize_t size = view.len;
    /* Output: unescaping never grows a string; 16 bytes of slack for the vector store. */
    char *base = PyMem_RawMalloc((size_t)size + 64);
    /* Each pair takes at least 27 bytes of input: {"chosen":"","rejected":""} */
    Py_ssize_t cap = size / 27 + 2;
    pair_t *pairs = PyMem_RawMalloc(sizeof(pair_t) * (size_t)cap);
    PyObject *result = NULL, *cs = NULL, *rs = NULL, *ends = NULL, *idx = NULL;
    if (base == NULL || pairs == NULL) {
        PyErr_NoMemory();
        goto done;
    }

    Py_ssize_t n = 0, line = 0;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    cursor_t c = {data, data + size, base};
    const char *lim = data + size;
    while (c.p < lim) {
        const char *eol = memchr(c.p, '\n', (size_t)(lim - c.p));
        if (eol == NULL) eol = lim;
        if (!is_blank(c.p, eol)) {
            pair_t *pr = &pairs[n];
            if (n >= cap || parse_line(&c, eol, base, pr) < 0) {
                ok = 0;
                break;
            }
            pr->line = line;
            Py_ssize_t e = align(base + pr->c_off, pr->c_len, base + pr->r_off, pr->r_len);
            if (e >= 0 && !pr->c_ascii) e = code_points(base + pr->c_off, e);
            pr->end = e;
            n++;
        }
        line++;
        c.p = eol + 1;
    }
    Py_END_ALLOW_THREADS

    if (!ok || n == 0) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    cs = PyList_New(n);
    rs = PyList_New(n);
    ends = PyList_New(n);
    idx = PyList_New(n);
    if (cs == NULL || rs == NULL || ends == NULL || idx == NULL) goto done;
    for (Py_ssize_t k = 0; k < n; k++) {
        pair_t *pr = &pairs[k];
        PyObject *cu = make_str(base + pr->c_off, pr->c_len, pr->c_ascii);
        PyObject *ru = cu ? make_str(base + pr->r_off, pr->r_len, pr->r_ascii) : NULL;
        if (ru == NULL) {
            Py_XDECREF(cu);
            if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
                PyErr_Clear(); /* invalid UTF-8: the reference reader reports it */
                result = Py_NewRef(Py_None);
            }
            goto done;
        }
        PyList_SET_ITEM(cs, k, cu);
        PyList_SET_ITEM(rs, k, ru);
        PyObject *end = pr->end >= 0 ? PyLong_FromSsize_t(pr->end)
                                     : PyObject_CallFunctionObjArgs(slow_align, cu, ru, NULL);
        if (end == NULL) goto done;
        PyList_SET_ITEM(ends, k, end);
        PyObject *i = PyLong_FromSsize_t(first + pr->line);
        if (i == NULL) goto done;
        PyList_SET_ITEM(idx, k, i);
    }
    result = Py_BuildValue("(OOOOn)", cs, rs, ends, idx, line);

done:
    Py_XDECREF(cs);
    Py_XDECREF(rs);
    Py_XDECREF(ends);
    Py_XDECREF(idx);
    PyMem_RawFree(base);
    PyMem_RawFree(pairs);
    PyBuffer_Release(&view);
    return result;
}

/* ------------------------------------------------------------------ Arrow columns */

/* Whether s[0:n] is valid UTF-8 as Python's strict decoder sees it (no overlong forms, no
 * surrogates, nothing above U+10FFFF). */
static int valid_utf8(const unsigned char *s, Py_ssize_t n) {
    Py_ssize_t k = 0;
    while (k < n) {
#ifdef HH_SSE2
        /* ASCII runs (most of the text) 16 bytes at a time */
        while (k + 16 <= n && _mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(s + k))) == 0)
            k += 16;
        if (k >= n) break;
#endif
        unsigned char b = s[k];
        if (b < 0x80) {
            k++;
            continue;
        }
        Py_ssize_t need;
        unsigned char lo = 0x80, hi = 0xBF; /* bounds of the second byte */
        if (b >= 0xC2 && b <= 0xDF) {
            need = 1;
        } else if (b >= 0xE0 && b <= 0xEF) {
            need = 2;
            if (b == 0xE0) lo = 0xA0;
            if (b == 0xED) hi = 0x9F;
        } else if (b >= 0xF0 && b <= 0xF4) {
            need = 3;
            if (b == 0xF0) lo = 0x90;
            if (b == 0xF4) hi = 0x8F;
        } else {
            return 0;
        }
        if (n - k <= need) return 0;
        if (s[k + 1] < lo || s[k + 1] > hi) return 0;
        for (Py_ssize_t j = 2; j <= need; j++)
            if ((s[k + j] & 0xC0) != 0x80) return 0;
        k += need + 1;
    }
    return 1;
}

/* Bytes taken by the first `cps` code points of valid UTF-8 s[0:n]. */
static Py_ssize_t byte_offset(const char *s, Py_ssize_t n, Py_ssize_t cps) {
    Py_ssize_t k = 0;
    while (k < n && cps > 0) {
        k++;
        while (k < n && ((unsigned char)s[k] & 0xC0) == 0x80) k++;
        cps--;
    }
    return k;
}

/* A bytes object holding one column's UTF-8 data and one holding its int32 offsets. */
typedef struct {
    PyObject *data, *offsets;
    char *w;
    int32_t *o;
} column_t;

static int column_new(column_t *col, Py_ssize_t size, Py_ssize_t n) {
    col->data = PyBytes_FromStringAndSize(NULL, size);
    col->offsets = PyBytes_FromStringAndSize(NULL, (n + 1) * (Py_ssize_t)sizeof(int32_t));
    if (col->data == NULL || col->offsets == NULL) return -1;
    col->w = PyBytes_AS_STRING(col->data);
    col->o = (int32_t *)PyBytes_AS_STRING(col->offsets);
    col->o[0] = 0;
    return 0;
}

static void column_put(column_t *col, Py_ssize_t k, const char *s, Py_ssize_t n) {
    memcpy(col->w, s, (size_t)n);
    col->w += n;
    col->o[k + 1] = col->o[k] + (int32_t)n;
}

PyDoc_STRVAR(parse_block_arrow_doc,
"parse_block_arrow(data, first, prompt_length, dpo) -> (columns, indices, pairs, lines) | None\n"
"\n"
"Like parse_block, but gives Arrow string columns instead of str objects: ``columns`` is a\n"
"tuple of (utf8 data, int32 offsets) bytes pairs, (prompt, chosen response, rejected\n"
"response) when ``dpo`` is true, else (chosen, rejected); ``indices`` is the pairs' line\n"
"numbers as int64 bytes. No str is made except for a pair outside the common alignment\n"
"case, whose prompt end comes from ``prompt_length(chosen, rejected)``. None as for\n"
"parse_block, and for a block too large for int32 offsets.");

static PyObject *parse_block_arrow(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer view;
    Py_ssize_t first;
    PyObject *slow_align;
    int dpo;
    if (!PyArg_ParseTuple(args, "y*nOp:parse_block_arrow", &view, &first, &slow_align, &dpo))
        return NULL;

    const char *data = view.buf;
    Py_ssize_t size = view.len;
    char *base = PyMem_RawMalloc((size_t)size + 64);
    Py_ssize_t cap = size / 27 + 2;
    pair_t *pairs = PyMem_RawMalloc(sizeof(pair_t) * (size_t)cap);
    PyObject *result = NULL, *idx = NULL;
    column_t cols[3] = {{NULL, NULL, NULL, NULL}, {NULL, NULL, NULL, NULL},
                        {NULL, NULL, NULL, NULL}};
    if (base == NULL || pairs == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (size > INT32_MAX) { /* offsets are int32: the caller takes another path */
        result = Py_NewRef(Py_None);
        goto done;
    }

    Py_ssize_t n = 0, line = 0;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    cursor_t c = {data, data + size, base};
    const char *lim = data + size;
    while (c.p < lim) {
        const char *eol = memchr(c.p, '\n', (size_t)(lim - c.p));
        if (eol == NULL) eol = lim;
        if (!is_blank(c.p, eol)) {
            pair_t *pr = &pairs[n];
            if (n >= cap || parse_line(&c, eol, base, pr) < 0) {
                ok = 0;
                break;
            }
            if ((!pr->c_ascii &&
                 !valid_utf8((const unsigned char *)base + pr->c_off, pr->c_len)) ||
                (!pr->r_ascii &&
                 !valid_utf8((const unsigned char *)base + pr->r_off, pr->r_len))) {
                ok = 0; /* invalid UTF-8: the reference reader reports it */
                break;
            }
            pr->line = line;
            pr->end = align(base + pr->c_off, pr->c_len, base + pr->r_off, pr->r_len);
            n++;
        }
        line++;
        c.p = eol + 1;
    }
    Py_END_ALLOW_THREADS

    if (!ok || n == 0) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    /* prompt ends (in bytes) of the pairs outside the common case, from the Python function */
    Py_ssize_t c_total = 0, r_total = 0, p_total = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        pair_t *pr = &pairs[k];
        if (pr->end < 0) {
            PyObject *cu = make_str(base + pr->c_off, pr->c_len, pr->c_ascii);
            PyObject *ru = cu ? make_str(base + pr->r_off, pr->r_len, pr->r_ascii) : NULL;
            PyObject *end = ru ? PyObject_CallFunctionObjArgs(slow_align, cu, ru, NULL) : NULL;
            Py_XDECREF(cu);
            Py_XDECREF(ru);
            if (end == NULL) goto done;
            Py_ssize_t cps = PyLong_AsSsize_t(end);
            Py_DECREF(end);
            if (cps == -1 && PyErr_Occurred()) goto done;
            pr->end = byte_offset(base + pr->c_off, pr->c_len, cps);
        }
        c_total += pr->c_len;
        r_total += pr->r_len;
        p_total += pr->end;
    }
    int ncols = dpo ? 3 : 2;
    if (dpo) {
        if (column_new(&cols[0], p_total, n) < 0 || column_new(&cols[1], c_total - p_total, n) < 0 ||
            column_new(&cols[2], r_total - p_total, n) < 0)
            goto done;
    } else {
        if (column_new(&cols[0], c_total, n) < 0 || column_new(&cols[1], r_total, n) < 0) goto done;
    }
    idx = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    if (idx == NULL) goto done;
    int64_t *ix = (int64_t *)PyBytes_AS_STRING(idx);
    /* the copies into the new (not yet shared) buffers need no Python: other threads run */
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < n; k++) {
        pair_t *pr = &pairs[k];
        const char *cs = base + pr->c_off, *rs = base + pr->r_off;
        if (dpo) {
            column_put(&cols[0], k, cs, pr->end);
            column_put(&cols[1], k, cs + pr->end, pr->c_len - pr->end);
            column_put(&cols[2], k, rs + pr->end, pr->r_len - pr->end);
        } else {
            column_put(&cols[0], k, cs, pr->c_len);
            column_put(&cols[1], k, rs, pr->r_len);
        }
        ix[k] = (int64_t)(first + pr->line);
    }
    Py_END_ALLOW_THREADS
    PyObject *colt = PyTuple_New(ncols);
    if (colt == NULL) goto done;
    for (int j = 0; j < ncols; j++) {
        PyObject *pair = PyTuple_Pack(2, cols[j].data, cols[j].offsets);
        if (pair == NULL) {
            Py_DECREF(colt);
            goto done;
        }
        PyTuple_SET_ITEM(colt, j, pair);
    }
    result = Py_BuildValue("(NOnn)", colt, idx, n, line);

done:
    for (int j = 0; j < 3; j++) {
        Py_XDECREF(cols[j].data);
        Py_XDECREF(cols[j].offsets);
    }
    Py_XDECREF(idx);
    PyMem_RawFree(base);
    PyMem_RawFree(pairs);
    PyBuffer_Release(&view);
    return result;
}

PyDoc_STRVAR(untrack_doc,
"untrack(objects) -> None\n"
"\n"
"Stop the cyclic garbage collector tracking each object of the list ``objects`` (or the one\n"
"object, when ``objects`` is not a list). Only for\n"
"objects that hold nothing but atomic values (str, int, None), which can never be part of\n"
"a reference cycle; the collector then need not walk them.");

static PyObject *untrack(PyObject *Py_UNUSED(self), PyObject *objs) {
    if (!PyList_CheckExact(objs)) { /* one object */
        if (PyObject_IS_GC(objs) && PyObject_GC_IsTracked(objs)) PyObject_GC_UnTrack(objs);
        Py_RETURN_NONE;
    }
    Py_ssize_t n = PyList_GET_SIZE(objs);
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *o = PyList_GET_ITEM(objs, k);
        if (PyObject_IS_GC(o) && PyObject_GC_IsTracked(o)) PyObject_GC_UnTrack(o);
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(build_doc,
"build(cls, slots, columns) -> list\n"
"\n"
"Instances of the slotted class ``cls`` made without calling it (as ``object.__new__`` and\n"
"the slot descriptors' ``__set__`` would): ``slots`` is a tuple of ``cls``'s member\n"
"descriptors and ``columns`` a tuple of as many values, each a list (one value per record)\n"
"or anything else (the same value for every record); the lists have one length. The\n"
"records are untracked by the cyclic garbage collector: for values that are all atomic\n"
"(str, int, None) only.");

static PyObject *build(PyObject *Py_UNUSED(self), PyObject *args) {
    PyTypeObject *cls;
    PyObject *slots, *columns;
    if (!PyArg_ParseTuple(args, "O!O!O!:build", &PyType_Type, &cls, &PyTuple_Type, &slots,
                          &PyTuple_Type, &columns))
        return NULL;
    Py_ssize_t k = PyTuple_GET_SIZE(slots);
    if (PyTuple_GET_SIZE(columns) != k || k > 16) {
        PyErr_SetString(PyExc_ValueError, "build(): one column per slot, at most 16");
        return NULL;
    }
    Py_ssize_t offsets[16], n = -1;
    for (Py_ssize_t j = 0; j < k; j++) {
        PyObject *d = PyTuple_GET_ITEM(slots, j);
        if (!PyObject_TypeCheck(d, &PyMemberDescr_Type) ||
            ((PyDescrObject *)d)->d_type != cls ||
            ((PyMemberDescrObject *)d)->d_member->type != T_OBJECT_EX) {
            PyErr_SetString(PyExc_TypeError, "build(): slots must be cls's own object slots");
            return NULL;
        }
        offsets[j] = ((PyMemberDescrObject *)d)->d_member->offset;
        if (offsets[j] < 0 || offsets[j] + (Py_ssize_t)sizeof(PyObject *) > cls->tp_basicsize) {
            PyErr_SetString(PyExc_TypeError, "build(): a slot lies outside the instance");
            return NULL;
        }
        PyObject *col = PyTuple_GET_ITEM(columns, j);
        if (PyList_CheckExact(col)) {
            if (n >= 0 && PyList_GET_SIZE(col) != n) {
                PyErr_SetString(PyExc_ValueError, "build(): the columns differ in length");
                return NULL;
            }
            n = PyList_GET_SIZE(col);
        }
    }
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "build(): no list among the columns");
        return NULL;
    }
    PyObject *out = PyList_New(n);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = cls->tp_alloc(cls, 0);
        if (o == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        if (PyObject_IS_GC(o) && PyObject_GC_IsTracked(o)) PyObject_GC_UnTrack(o);
        for (Py_ssize_t j = 0; j < k; j++) {
            PyObject *col = PyTuple_GET_ITEM(columns, j);
            PyObject *v = PyList_CheckExact(col) ? PyList_GET_ITEM(col, i) : col;
            PyObject **slot = (PyObject **)((char *)o + offsets[j]);
            Py_XSETREF(*slot, Py_NewRef(v));
        }
        PyList_SET_ITEM(out, i, o);
    }
    return out;
}

static PyMethodDef methods[] = {
    {"parse_block", parse_block, METH_VARARGS, parse_block_doc},
    {"parse_block_arrow", parse_block_arrow, METH_VARARGS, parse_block_arrow_doc},
    {"untrack", untrack, METH_O, untrack_doc},
    {"build", build, METH_VARARGS, build_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "hhrlhf._jsonl",
    "Native block parser for hhrlhf.fastload (optional; the loader works without it).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__jsonl(void) { return PyModule_Create(&module); }
