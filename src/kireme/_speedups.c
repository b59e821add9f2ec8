/* kireme._speedups: the text layer's per-character and per-candidate loops in C (issue #27).
 *
 * Each function does exactly what its pure-Python twin does, which stays the reference and the fallback
 * (no compiler at install time, or KIREME_PURE_PYTHON=1); tests/test_speedups.py compares the two on
 * generated text, and the chunks and ids of the strategies built on them.
 *
 *   scan_sentence_cuts  kireme/text/sentences.py `_scan_sentence_cuts` before its line-break rules: the
 *                       protected quotations (`_quoted_spans`), the candidate sentence ends (`_CANDIDATE`),
 *                       the quotation rule and the whitespace after a decided end. Candidates that need
 *                       more (`.` and `．`: abbreviations, initials, labels, Unicode letter classes; `!?！？`
 *                       after a closer before whitespace: a lower-case word next) are returned to Python
 *                       (`_judged_end`) undecided.
 *   judge_periods       `_judged_end` for "." candidates whose word before and next character are plain
 *                       (ASCII, kana, kanji, CJK and general punctuation); the others go back to Python.
 *   line_break_cuts     `_line_break_cuts`: the sentence starts after item, title and label lines (not after
 *                       a wrapped English line that only looks like a label: `_label_wrap`).
 *   scan_run            `SentenceIndex._scan` on one run of blocks: the three above and the block starts, merged.
 *   item_line_starts    `_item_line_starts_python`: the lines that are items, bracketed titles or labels.
 *   paragraph_breaks    `_breaks_python`: blank lines and the line breaks before item markers.
 *   ends_with_heading   kireme/text/headings.py `_ends_with_heading_python`: a heading line at a chunk end.
 *   trim_span           kireme/pack.py `_trim_python`, where no grapheme scan is needed (else None).
 *   all_simple          kireme/text/graphemes.py `CutFilter.keep` where every cut lies between simple characters.
 *   merge_run           kireme/pack.py `_Packer.merge_pieces`' greedy loop in characters, up to the first piece
 *                       that needs Python (a split one level down, a heading with its body, grapheme rules).
 *   make_chunks         kireme/chunkers.py `build_chunks`' last step: every span of a plan as a `Chunk` holding
 *                       the document's `ChunkIds`, its id left for when one is read.
 *   IdField             kireme/document.py `_FromIds`: a chunk's `id` and `doc_id`, worked out when first read
 *                       (SHA-256 of the document's id prefix and the span; with the x86 SHA extensions where the
 *                       processor has them).
 *   sha256_extensions   for the tests: the ids hashed with the SHA extensions or the portable loop.
 *   char_packed         kireme/pack.py `_Packer.run`'s end in characters: the packed spans with their sizes.
 *   char_windows        kireme/pack.py `_Packer.split_graphemes` in characters: windows of the budget, each cut
 *                       between two characters that never join a cluster (else Python goes on from there).
 *   pair_cuts           kireme/boundaries/levels.py `PairLevel`: the cut between two neighbouring characters
 *                       of two classes (the `script` level: hiragana before kanji or katakana), the classes
 *                       given as bitmaps over code points that Python derives from the `regex` engine.
 *   line_cuts           kireme/boundaries/levels.py `LineLevel`: where each line break (`\r?\n`) starts.
 *   line_starts         kireme/text/markdown.py `line_starts`: where every line starts (the outline's line map).
 *   clause_cuts         kireme/boundaries/levels.py `CLAUSE`: after clause marks (a comma before a digit aside).
 *   word_cuts           kireme/boundaries/levels.py `WORD`: where each run of spaces starts.
 *   kept_brackets       kireme/boundaries/levels.py `KeptBrackets.spans`: the brackets a chunk keeps whole.
 *   token_offsets       kireme/length.py `_TokenSizer`'s tables of a token stream (where each token starts).
 *   vocabulary          the marks compiled in, for the test that keeps them equal to kireme.text.marks.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define QUOTE_SPAN_LIMIT 2000
#define MAX_DEPTH 32

/* kireme.text.marks: TERMINATORS, CLOSERS, OPEN_TO_CLOSE (kept in step by a test) */
static const Py_UCS4 TERMINATORS[] = {0x3002, 0xFF01, 0xFF1F, '!',    '?',    0xFF61, 0x203C, 0x2047,
                                       0x2048, 0x2049, 0x0964, 0x0965, 0x061F, 0x06D4, 0x1362, 0x104B};
static const Py_UCS4 CLOSERS[] = {0x300D, 0x300F, 0xFF09, ')', 0x3011, 0x3009, 0x300B, 0x3015, 0xFF3D, ']',
                                  0xFF5D, '}', 0x3019, 0x3017, '"', '\'', 0x201D, 0x2019, 0x00BB, 0x203A};
static const Py_UCS4 OPENERS[] = {0x300C, 0x300E, 0xFF08, '(', 0x3010, 0x3008, 0x300A, 0x3014};
static const Py_UCS4 OPENER_CLOSES[] = {0x300D, 0x300F, 0xFF09, ')', 0x3011, 0x3009, 0x300B, 0x3015};

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))
#define FULLWIDTH_STOP 0xFF0E

static int in_set(Py_UCS4 c, const Py_UCS4 *set, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (set[i] == c) return 1;
    }
    return 0;
}

/* Which of the sets above each BMP character belongs to (every mark in them is in the BMP), made at import:
 * the scanners ask at every candidate, and a lookup beats a walk through the list. */
#define MARK_TERMINATOR 1
#define MARK_CLOSER 2
#define MARK_OPENER 4
#define MARK_BRACKET_CLOSER 8
static unsigned char MARK_CLASS[0x10000];

static void mark_class(const Py_UCS4 *marks, size_t count, int mark) {
    for (size_t i = 0; i < count; i++) {
        if (marks[i] < 0x10000) MARK_CLASS[marks[i]] |= (unsigned char)mark; /* beyond: the C-vs-Python tests fail */
    }
}

static void build_mark_classes(void) {
    mark_class(TERMINATORS, COUNT(TERMINATORS), MARK_TERMINATOR);
    mark_class(CLOSERS, COUNT(CLOSERS), MARK_CLOSER);
    mark_class(OPENERS, COUNT(OPENERS), MARK_OPENER);
    mark_class(OPENER_CLOSES, COUNT(OPENER_CLOSES), MARK_BRACKET_CLOSER);
}

static inline int has_mark_class(Py_UCS4 c, int mark) { return c < 0x10000 && (MARK_CLASS[c] & mark); }
static int is_terminator(Py_UCS4 c) { return has_mark_class(c, MARK_TERMINATOR); }
static int is_closer(Py_UCS4 c) { return has_mark_class(c, MARK_CLOSER); }

/* the index of an opening bracket in OPENERS, -1 for any other character */
static int opener_index(Py_UCS4 c) {
    if (!has_mark_class(c, MARK_OPENER)) return -1;
    for (size_t i = 0; i < COUNT(OPENERS); i++) {
        if (OPENERS[i] == c) return (int)i;
    }
    return -1;
}

static int is_bracket_closer(Py_UCS4 c) { return has_mark_class(c, MARK_BRACKET_CLOSER); }

/* the `regex` engine's \s: str.isspace less the information separators U+001C..U+001F */
static int is_regex_space(Py_UCS4 c) { return Py_UNICODE_ISSPACE(c) && !(c >= 0x1C && c <= 0x1F); }

static int is_digit_before_stop(Py_UCS4 c) { return (c >= '0' && c <= '9') || (c >= 0xFF10 && c <= 0xFF19); }

/* `_QUOTE_CONTINUES.match(text, e)`: a particle or quotative after a closing quote */
static int quote_continues(int kind, const void *data, Py_ssize_t n, Py_ssize_t e) {
    if (e >= n) return 0;
    Py_UCS4 c = PyUnicode_READ(kind, data, e);
    switch (c) {
        case 0x3068: /* と (って, という start with other characters or with と) */
        case 0x306E: /* の */
        case 0x304C: /* が */
        case 0x3092: /* を */
        case 0x306F: /* は */
        case 0x306B: /* に */
        case 0x3067: /* で */
        case 0x3082: /* も */
        case 0x3084: /* や */
        case 0x3001: /* 、 (no sentence opens with a comma: 除く。）、第六項) */
        case 0xFF0C: /* ， */
        case ',':
            return 1;
        default:
            break;
    }
    if (e + 1 >= n) return 0;
    Py_UCS4 d = PyUnicode_READ(kind, data, e + 1);
    return (c == 0x3063 && d == 0x3066)    /* って */
           || (c == 0x3088 && d == 0x308A) /* より */
           || (c == 0x304B && d == 0x3089) /* から */
           || (c == 0x307E && d == 0x3067) /* まで */
           || (c == 0x306A && d == 0x3069) /* など */
           || (c == 0x304B && (d == 0x3001 || d == 0x3002)); /* か、 か。 */
}

/* whether `c` may be a bracket, a terminator, a closer or a period: a quick test before the exact ones */
static inline int may_matter(Py_UCS4 c) {
    if (c < 0x80) return c == '.' || c == '!' || c == '?' || c == '(' || c == ')' || c == ']' || c == '}' || c == '"' || c == '\'';
    if (c < 0x2019) /* », and the terminators of other scripts (। ॥ ؟ ۔ ። ။) */
        return c == 0x00BB || c == 0x0964 || c == 0x0965 || c == 0x061F || c == 0x06D4 || c == 0x1362 || c == 0x104B;
    if (c <= 0x2049) return 1;
    if (c < 0x3001) return 0;
    if (c <= 0x301F) return 1;
    return c >= 0xFF01 && c <= 0xFF61;
}

/* may_matter over the Basic Multilingual Plane, one bit per code point (made once, at import): the scans
 * below test a character with one load instead of a chain of comparisons */
static unsigned char MATTERS[0x10000 / 8];

static void build_matters(void) {
    for (Py_UCS4 c = 0; c < 0x10000; c++) {
        if (may_matter(c)) MATTERS[c >> 3] |= (unsigned char)(1u << (c & 7));
    }
}

#define MATTERS_BMP(c) ((MATTERS[(c) >> 3] >> ((c) & 7)) & 1)

/* The first position in [p, b) whose character may matter (may_matter), else b. The whole-text scans go from
 * one such character to the next: each loop runs on the string's own code unit type, without
 * PyUnicode_READ's test of the kind at every character. */
static Py_ssize_t next_mattering(int kind, const void *data, Py_ssize_t p, Py_ssize_t b) {
    if (kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *s = data;
        while (p < b && !MATTERS_BMP(s[p])) p++;
    } else if (kind == PyUnicode_2BYTE_KIND) {
        const Py_UCS2 *s = data;
        while (p < b && !MATTERS_BMP(s[p])) p++;
    } else {
        const Py_UCS4 *s = data;
        while (p < b && (s[p] > 0xFFFF || !MATTERS_BMP(s[p]))) p++;
    }
    return p < b ? p : b;
}

/* The first "\n" in [p, b), else b (the same, for the line-by-line scans). */
static Py_ssize_t next_newline(int kind, const void *data, Py_ssize_t p, Py_ssize_t b) {
    if (p >= b) return b;
    if (kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *s = data;
        const Py_UCS1 *hit = memchr(s + p, '\n', (size_t)(b - p));
        return hit != NULL ? hit - s : b;
    }
    if (kind == PyUnicode_2BYTE_KIND) {
        const Py_UCS2 *s = data;
#if defined(__SSE2__)
        /* eight code units at a time (most Japanese text is two-byte): a line is hundreds of them */
        const __m128i newline = _mm_set1_epi16('\n');
        for (; p + 8 <= b; p += 8) {
            int hits = _mm_movemask_epi8(_mm_cmpeq_epi16(_mm_loadu_si128((const __m128i *)(s + p)), newline));
            if (hits) return p + (__builtin_ctz((unsigned)hits) >> 1);
        }
#endif
        while (p < b && s[p] != '\n') p++;
    } else {
        const Py_UCS4 *s = data;
#if defined(__SSE2__)
        const __m128i newline = _mm_set1_epi32('\n');
        for (; p + 4 <= b; p += 4) {
            int hits = _mm_movemask_epi8(_mm_cmpeq_epi32(_mm_loadu_si128((const __m128i *)(s + p)), newline));
            if (hits) return p + (__builtin_ctz((unsigned)hits) >> 2);
        }
#endif
        while (p < b && s[p] != '\n') p++;
    }
    return p;
}

/* The last "\n" in [lo, p], else lo - 1 (scanning back: a line's start from anywhere in it). */
static Py_ssize_t prev_newline(int kind, const void *data, Py_ssize_t lo, Py_ssize_t p) {
    if (kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *s = data;
#if defined(__SSE2__)
        const __m128i newline = _mm_set1_epi8('\n');
        for (; p - 15 >= lo; p -= 16) {
            int hits = _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(s + p - 15)), newline));
            if (hits) return p - 15 + (31 - __builtin_clz((unsigned)hits));
        }
#endif
        while (p >= lo && s[p] != '\n') p--;
    } else if (kind == PyUnicode_2BYTE_KIND) {
        const Py_UCS2 *s = data;
#if defined(__SSE2__)
        const __m128i newline = _mm_set1_epi16('\n');
        for (; p - 7 >= lo; p -= 8) {
            int hits = _mm_movemask_epi8(_mm_cmpeq_epi16(_mm_loadu_si128((const __m128i *)(s + p - 7)), newline));
            if (hits) return p - 7 + ((31 - __builtin_clz((unsigned)hits)) >> 1);
        }
#endif
        while (p >= lo && s[p] != '\n') p--;
    } else {
        const Py_UCS4 *s = data;
        while (p >= lo && s[p] != '\n') p--;
    }
    return p >= lo ? p : lo - 1;
}

typedef struct {
    Py_ssize_t pos;
    Py_UCS4 closer;
} Open;

/* the first block start > pos (block_starts is sorted and ends with len(text) > pos) */
static Py_ssize_t next_block_after(const Py_ssize_t *blocks, Py_ssize_t nblocks, Py_ssize_t pos) {
    Py_ssize_t lo = 0, hi = nblocks;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (blocks[mid] <= pos)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < nblocks ? blocks[lo] : PY_SSIZE_T_MAX;
}

/* (x, y) as a tuple of two ints (what Py_BuildValue("(nn)") makes, without parsing a format) */
static PyObject *int_pair(Py_ssize_t x, Py_ssize_t y) {
    PyObject *first = PyLong_FromSsize_t(x), *second = first != NULL ? PyLong_FromSsize_t(y) : NULL;
    PyObject *pair = second != NULL ? PyTuple_New(2) : NULL;
    if (pair == NULL) {
        Py_XDECREF(first);
        Py_XDECREF(second);
        return NULL;
    }
    PyTuple_SET_ITEM(pair, 0, first);
    PyTuple_SET_ITEM(pair, 1, second);
    return pair;
}

static int append_pair(PyObject *list, Py_ssize_t x, Py_ssize_t y) {
    PyObject *pair = int_pair(x, y);
    if (pair == NULL) return -1;
    int rc = PyList_Append(list, pair);
    Py_DECREF(pair);
    return rc;
}

static int append_index(PyObject *list, Py_ssize_t x) {
    PyObject *value = PyLong_FromSsize_t(x);
    if (value == NULL) return -1;
    int rc = PyList_Append(list, value);
    Py_DECREF(value);
    return rc;
}

static int push_offset(Py_ssize_t **array, Py_ssize_t *count, Py_ssize_t *room, Py_ssize_t value);

/* the ints of `list` appended to a growable C array (`push_offset`) */
static int collect_offsets(PyObject *list, Py_ssize_t **array, Py_ssize_t *count, Py_ssize_t *room) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
        Py_ssize_t p = PyLong_AsSsize_t(PyList_GET_ITEM(list, i));
        if (p == -1 && PyErr_Occurred()) return -1;
        if (push_offset(array, count, room, p) < 0) return -1;
    }
    return 0;
}


/* `_quoted_spans(text, a, b)` into `quoted`, and the same as a C array for the candidate loop; on the same
 * pass, the positions of the characters a candidate sentence end starts with (a terminator, "." or "．") into
 * `candidates` (the candidate loop reads them instead of scanning the span again) */
static int quoted_spans(int kind, const void *data, Py_ssize_t a, Py_ssize_t b, const Py_ssize_t *blocks,
                        Py_ssize_t nblocks, PyObject *quoted, Py_ssize_t **spans_out, Py_ssize_t *count_out,
                        Py_ssize_t **candidates, Py_ssize_t *ncandidates, Py_ssize_t *candidate_room) {
    Open stack[MAX_DEPTH];
    int depth = 0;
    Py_ssize_t next_block = -1;
    Py_ssize_t cap = 16, count = 0;
    Py_ssize_t *spans = PyMem_Malloc(sizeof(Py_ssize_t) * 2 * cap);
    if (spans == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t pos = next_mattering(kind, data, a, b); pos < b; pos = next_mattering(kind, data, pos + 1, b)) {
        Py_UCS4 c = PyUnicode_READ(kind, data, pos);
        if (is_terminator(c) || c == FULLWIDTH_STOP || c == '.') {
            if (push_offset(candidates, ncandidates, candidate_room, pos) < 0) {
                PyMem_Free(spans);
                return -1;
            }
        }
        int open = opener_index(c);
        if (open < 0 && !is_bracket_closer(c)) continue;
        if (next_block < 0) {
            next_block = next_block_after(blocks, nblocks, pos);
        } else if (pos >= next_block) { /* a blank line since the bracket before */
            depth = 0;
            next_block = next_block_after(blocks, nblocks, pos);
        }
        if (open >= 0) {
            if (depth >= MAX_DEPTH) {
                memmove(stack, stack + 1, sizeof(Open) * (MAX_DEPTH - 1));
                depth = MAX_DEPTH - 1;
            }
            stack[depth].pos = pos;
            stack[depth].closer = OPENER_CLOSES[open];
            depth++;
            continue;
        }
        for (int d = depth - 1; d >= 0; d--) {
            if (stack[d].closer == c) {
                Py_ssize_t opened = stack[d].pos;
                depth = d;
                if (depth == 0 && pos - opened <= QUOTE_SPAN_LIMIT) {
                    if (count == cap) {
                        cap *= 2;
                        Py_ssize_t *grown = PyMem_Realloc(spans, sizeof(Py_ssize_t) * 2 * cap);
                        if (grown == NULL) {
                            PyMem_Free(spans);
                            PyErr_NoMemory();
                            return -1;
                        }
                        spans = grown;
                    }
                    spans[2 * count] = opened;
                    spans[2 * count + 1] = pos;
                    count++;
                    if (append_pair(quoted, opened, pos) < 0) {
                        PyMem_Free(spans);
                        return -1;
                    }
                }
                break;
            }
        }
    }
    *spans_out = spans;
    *count_out = count;
    return 0;
}

/* The end of the candidate `_CANDIDATE` matches at `p` (its first character `c`), or -1. */
/* `_closing_quotes_end` of kireme/text/sentences.py: the end `e` of the candidate starting at `s` without the
 * straight double quotes after its terminators that open the next sentence (a '"' that closes no quote opened
 * before it on its line, counted from the line's start up to QUOTE_REACH back, and has text right after it) */
#define QUOTE_REACH 400
static Py_ssize_t closing_quotes_end(int kind, const void *data, Py_ssize_t b, Py_ssize_t s, Py_ssize_t e) {
    Py_ssize_t i = s;
    while (i < e && PyUnicode_READ(kind, data, i) != '"') i++;
    if (i >= e) return e;
    Py_ssize_t lo = s > QUOTE_REACH ? s - QUOTE_REACH : 0, k = s;
    int opened = 0;
    while (k > lo && PyUnicode_READ(kind, data, k - 1) != '\n') k--;
    for (; k < s; k++)
        if (PyUnicode_READ(kind, data, k) == '"') opened = !opened;
    for (; i < e; i++) {
        if (PyUnicode_READ(kind, data, i) != '"') continue;
        if (!opened && i + 1 < b && !Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, i + 1))) return i;
        opened = !opened; /* this one closes the quote (or, at a line's end, is a stray one) */
    }
    return e;
}

/* `_FOOTNOTES` of kireme/text/sentences.py from q: the footnote markers ("[1]", "[^2]") after a sentence's end,
 * the last one given back when a "(" or ":" follows it (a link or a definition, as the regex backtracks) */
static Py_ssize_t footnotes_end(int kind, const void *data, Py_ssize_t b, Py_ssize_t q) {
    Py_ssize_t last = q;
    for (;;) {
        Py_ssize_t r = q;
        if (r >= b || PyUnicode_READ(kind, data, r) != '[') break;
        r++;
        if (r < b && PyUnicode_READ(kind, data, r) == '^') r++;
        Py_ssize_t digits = r;
        while (r < b && r - digits < 4) {
            Py_UCS4 d = PyUnicode_READ(kind, data, r);
            if (d < '0' || d > '9') break;
            r++;
        }
        if (r == digits || r - digits > 3 || r >= b || PyUnicode_READ(kind, data, r) != ']') break;
        last = q;
        q = r + 1;
    }
    if (q < b && q != last) {
        Py_UCS4 next = PyUnicode_READ(kind, data, q);
        if (next == '(' || next == ':') return last;
    }
    return q;
}

static Py_ssize_t candidate_end_raw(int kind, const void *data, Py_ssize_t b, Py_ssize_t p, Py_UCS4 c) {
    Py_ssize_t q = p + 1;
    if (is_terminator(c)) { /* a run of terminators and the closers after it; not a "!" opening "![" (an image) */
        while (q < b && is_terminator(PyUnicode_READ(kind, data, q)) &&
               !(PyUnicode_READ(kind, data, q) == '!' && q + 1 < b && PyUnicode_READ(kind, data, q + 1) == '['))
            q++;
        while (q < b && is_closer(PyUnicode_READ(kind, data, q))) q++;
        return footnotes_end(kind, data, b, q);
    }
    if (c == FULLWIDTH_STOP) { /* "．" not after a digit, and its closers */
        if (p > 0 && is_digit_before_stop(PyUnicode_READ(kind, data, p - 1))) return -1;
        while (q < b && is_closer(PyUnicode_READ(kind, data, q))) q++;
        return footnotes_end(kind, data, b, q);
    }
    if (c != '.' || p == 0) return -1;
    Py_UCS4 before = PyUnicode_READ(kind, data, p - 1);
    if (!is_regex_space(before)) { /* dots after ink, their closers and footnotes, then whitespace or the end */
        while (q < b && PyUnicode_READ(kind, data, q) == '.') q++;
        while (q < b && is_closer(PyUnicode_READ(kind, data, q))) q++;
        q = footnotes_end(kind, data, b, q);
        if (q == b || is_regex_space(PyUnicode_READ(kind, data, q))) return q;
        return -1; /* fewer dots or closers end before a dot or a closer: never whitespace */
    }
    if ((before == ' ' || before == '\t') && q < b) { /* " . " in tokenised text: Python decides */
        Py_UCS4 after = PyUnicode_READ(kind, data, q);
        if (after == ' ' || after == '\t') return q;
    }
    return -1;
}

/* the end of the sentence-end candidate starting at p (its first character c), -1 for none */
static Py_ssize_t candidate_end(int kind, const void *data, Py_ssize_t b, Py_ssize_t p, Py_UCS4 c) {
    Py_ssize_t e = candidate_end_raw(kind, data, b, p, c);
    return e < 0 ? e : closing_quotes_end(kind, data, b, p, e);
}

static int is_exclaim_or_question(Py_UCS4 c) { return c == '!' || c == '?' || c == 0xFF01 || c == 0xFF1F; }

/* whether `_judged_end` may reject a "!?！？" end: a closer last and whitespace after it (then it asks
 * whether a lower-case word follows: '"Are you sure?" he asked.'); at any other such end it cannot */
static int closer_then_space(int kind, const void *data, Py_ssize_t n, Py_ssize_t e) {
    return is_closer(PyUnicode_READ(kind, data, e - 1)) && e < n && is_regex_space(PyUnicode_READ(kind, data, e));
}

/* whether an ASCII "!?" end may be part of markup, code or a URL (`_inside_token`: "<!--", "!=", "![", "p?id"):
 * an ASCII graphic character before it, or "=", "[", "`" or an ASCII letter, digit or "_" after it; then Python
 * decides */
static int may_be_inside_token(int kind, const void *data, Py_ssize_t a, Py_ssize_t b, Py_ssize_t s, Py_ssize_t e,
                               Py_UCS4 c) {
    if (c != '!' && c != '?') return 0;
    if (e < b) {
        Py_UCS4 after = PyUnicode_READ(kind, data, e);
        if (after == '=' || after == '[' || after == '`' || after == '_' || (after >= 'a' && after <= 'z') ||
            (after >= 'A' && after <= 'Z') || (after >= '0' && after <= '9'))
            return 1;
    }
    if (s > a) {
        Py_UCS4 before = PyUnicode_READ(kind, data, s - 1);
        if (before >= '!' && before <= '~') return 1;
    }
    return 0;
}

static int is_judged(Py_UCS4 c) {
    return c == '.' || c == FULLWIDTH_STOP || c == '!' || c == '?' || c == 0xFF01 || c == 0xFF1F;
}

/* `scan_sentence_cuts` on a text's block starts already read into a C array */
static PyObject *scan_core(PyObject *text, Py_ssize_t a, Py_ssize_t b, const Py_ssize_t *blocks, Py_ssize_t nblocks) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (a < 0) a = 0;
    if (b > n) b = n;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    PyObject *cuts = PyList_New(0), *quoted = PyList_New(0), *pending = PyList_New(0);
    Py_ssize_t *spans = NULL, nspans = 0;
    Py_ssize_t *candidates = NULL, ncandidates = 0, candidate_room = 0;
    if (cuts == NULL || quoted == NULL || pending == NULL) goto error;
    if (a < b && quoted_spans(kind, data, a, b, blocks, nblocks, quoted, &spans, &nspans, &candidates, &ncandidates,
                              &candidate_room) < 0)
        goto error;

    Py_ssize_t qi = 0, last = -1;
    Py_ssize_t p = a;
    for (Py_ssize_t k = 0; k < ncandidates; k++) {
        if (candidates[k] < p) continue; /* inside the end of the candidate before */
        Py_ssize_t s = candidates[k];
        Py_UCS4 c = PyUnicode_READ(kind, data, s);
        Py_ssize_t e = candidate_end(kind, data, b, s, c);
        if (e < 0) {
            p = s + 1;
            continue;
        }
        p = e;
        /* a quote it closes, and the sentence goes on: 彼は"行こう。"と言った, 彼は“行く。”と (`_QUOTE_MARKS`) */
        Py_UCS4 closing = PyUnicode_READ(kind, data, e - 1);
        if ((closing == '"' || closing == 0x201D || closing == 0x2019) && e < b && quote_continues(kind, data, n, e))
            continue;
        while (qi < nspans && spans[2 * qi + 1] < s) qi++;
        if (qi < nspans && spans[2 * qi] < s && s <= spans[2 * qi + 1]) {
            /* inside a balanced quote: only a terminator that closes it, and not when the sentence goes on */
            int closes_quote = e == spans[2 * qi + 1] + 1;
            if (!closes_quote || (e < b && quote_continues(kind, data, n, e))) continue;
        }
        if (is_judged(c) && !(is_exclaim_or_question(c) && !closer_then_space(kind, data, n, e) &&
                              !may_be_inside_token(kind, data, a, b, s, e, c))) {
            if (append_pair(pending, s, e) < 0) goto error;
            continue;
        }
        while (e < b && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, e))) e++;
        if (a < e && e < b && e != last) {
            if (append_index(cuts, e) < 0) goto error;
            last = e;
        }
    }
    PyMem_Free(spans);
    PyMem_Free(candidates);
    return Py_BuildValue("(NNN)", cuts, quoted, pending);

error:
    PyMem_Free(spans);
    PyMem_Free(candidates);
    Py_XDECREF(cuts);
    Py_XDECREF(quoted);
    Py_XDECREF(pending);
    return NULL;
}

static PyObject *scan_sentence_cuts(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *text, *block_list;
    Py_ssize_t a, b;
    if (!PyArg_ParseTuple(args, "UnnO!", &text, &a, &b, &PyList_Type, &block_list)) return NULL;
    Py_ssize_t *blocks = NULL, nblocks = 0, room = 0;
    PyObject *out = collect_offsets(block_list, &blocks, &nblocks, &room) < 0 ? NULL
                                                                             : scan_core(text, a, b, blocks, nblocks);
    PyMem_Free(blocks);
    return out;
}


/* ---------------------------------------------------------------------------------------------------------
 * Item lines (`_line_break_cuts`): a line that is a list item, an article, a bracketed title or a short
 * "label: value" ends its sentence without a terminator. `_ITEM_LINE` of kireme/text/sentences.py, matched
 * at one line start with the text ending at `b`:
 *   [ \t\u3000]* then: 【 | 第[0-9０-９一二三四五六七八九十百千]+[条章節項款編] | [0-9０-９]{1,3}[.．)）]
 *   | [（(][0-9０-９一二三四五六七八九十a-zA-Zａ-ｚア-ン]{1,3}[）)] | [①-⑳] | a bullet | [-*+][ \t]
 *   | [^\s：:]{1,12}[：:]      (a bracketed title line starts with 【: the first case already)
 */
static const Py_UCS4 BULLETS[] = {0x30FB, 0x2022, 0x25CF, 0x25CB, 0x25C6, 0x25C7, 0x25A0, 0x25A1, 0x25AA, 0x25AB, 0x2023, 0x203B};
static const Py_UCS4 KANJI_DIGITS[] = {0x4E00, 0x4E8C, 0x4E09, 0x56DB, 0x4E94, 0x516D, 0x4E03, 0x516B, 0x4E5D, 0x5341};
static const Py_UCS4 ARTICLE_UNITS[] = {0x6761, 0x7AE0, 0x7BC0, 0x9805, 0x6B3E, 0x7DE8}; /* 条章節項款編 */

static int is_ascii_or_wide_digit(Py_UCS4 c) { return (c >= '0' && c <= '9') || (c >= 0xFF10 && c <= 0xFF19); }
static int is_kanji_digit(Py_UCS4 c) { return in_set(c, KANJI_DIGITS, COUNT(KANJI_DIGITS)); }
static int is_indent(Py_UCS4 c) { return c == ' ' || c == '\t' || c == 0x3000; }

static int is_article_numeral(Py_UCS4 c) {
    return is_ascii_or_wide_digit(c) || is_kanji_digit(c) || c == 0x767E || c == 0x5343; /* 百 千 */
}

static int is_paren_label(Py_UCS4 c) {
    return is_ascii_or_wide_digit(c) || is_kanji_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= 0xFF41 && c <= 0xFF5A) || (c >= 0x30A2 && c <= 0x30F3);
}

/* ITEM_MARKER after the indentation, at `i` (< b) */
static int item_marker_at(int kind, const void *data, Py_ssize_t b, Py_ssize_t i) {
    Py_UCS4 c = PyUnicode_READ(kind, data, i);
    Py_ssize_t j;
    if (c == 0x3010) return 1; /* 【 */
    if (c == 0x7B2C) {         /* 第, a numeral, a unit */
        for (j = i + 1; j < b && is_article_numeral(PyUnicode_READ(kind, data, j)); j++) {
        }
        if (j > i + 1 && j < b && in_set(PyUnicode_READ(kind, data, j), ARTICLE_UNITS, COUNT(ARTICLE_UNITS)))
            return 1;
        return 0;
    }
    if (is_ascii_or_wide_digit(c)) { /* one to three digits and . ． ) ） */
        for (j = i + 1; j < b && j < i + 3 && is_ascii_or_wide_digit(PyUnicode_READ(kind, data, j)); j++) {
        }
        if (j < b) {
            Py_UCS4 d = PyUnicode_READ(kind, data, j);
            return d == '.' || d == FULLWIDTH_STOP || d == ')' || d == 0xFF09;
        }
        return 0;
    }
    if (c == '(' || c == 0xFF08) { /* (1) （イ） (a): one to three labels and a closing parenthesis */
        for (j = i + 1; j < b && j < i + 4 && is_paren_label(PyUnicode_READ(kind, data, j)); j++) {
        }
        if (j > i + 1 && j < b) {
            Py_UCS4 d = PyUnicode_READ(kind, data, j);
            return d == ')' || d == 0xFF09;
        }
        return 0;
    }
    if (c >= 0x2460 && c <= 0x2473) return 1; /* ①-⑳ */
    if (in_set(c, BULLETS, COUNT(BULLETS))) return 1;
    if (c == '-' || c == '*' || c == '+') {
        if (i + 1 < b) {
            Py_UCS4 d = PyUnicode_READ(kind, data, i + 1);
            return d == ' ' || d == '\t';
        }
    }
    return 0;
}

static int is_colon(Py_UCS4 c) { return c == ':' || c == 0xFF1A; }

/* `_ITEM_LINE` matched at `q` (a line start), the text ending at `b` */
static int item_line_at(int kind, const void *data, Py_ssize_t b, Py_ssize_t q) {
    Py_ssize_t i = q;
    while (i < b && is_indent(PyUnicode_READ(kind, data, i))) i++;
    if (i >= b) return 0;
    if (item_marker_at(kind, data, b, i)) return 1;
    Py_ssize_t j = i; /* a label of one to twelve characters, then a colon */
    while (j < b && j < i + 12) {
        Py_UCS4 c = PyUnicode_READ(kind, data, j);
        if (Py_UNICODE_ISSPACE(c) || is_colon(c)) break;
        j++;
    }
    return j > i && j < b && is_colon(PyUnicode_READ(kind, data, j));
}

static int ends_inside_sentence(Py_UCS4 c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == ',';
}

/* `_label_wrap` of kireme/text/sentences.py: whether the label line at `p` (its line feed at `q` < b) is a hard
 * wrap of English prose instead: after spaces and tabs a lower-case ASCII word of up to twelve characters
 * ([a-z][A-Za-z0-9_-]{0,11}), a colon and a space or tab; its last non-space character a letter, digit or comma;
 * the line above it 40 characters or more (whitespace at either side aside), ending the same way, and no item,
 * title or label line. */
static int label_wrap_at(int kind, const void *data, Py_ssize_t b, Py_ssize_t p, Py_ssize_t q) {
    Py_ssize_t i = p;
    while (i < q && (PyUnicode_READ(kind, data, i) == ' ' || PyUnicode_READ(kind, data, i) == '\t')) i++;
    if (i >= q) return 0;
    Py_UCS4 c = PyUnicode_READ(kind, data, i);
    if (c < 'a' || c > 'z') return 0;
    Py_ssize_t j = i + 1;
    while (j < q && j < i + 12) {
        c = PyUnicode_READ(kind, data, j);
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            break;
        j++;
    }
    if (j + 1 >= q || PyUnicode_READ(kind, data, j) != ':') return 0;
    c = PyUnicode_READ(kind, data, j + 1);
    if (c != ' ' && c != '\t') return 0;
    Py_ssize_t e = q;
    while (e > p && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, e - 1))) e--;
    if (e == p || !ends_inside_sentence(PyUnicode_READ(kind, data, e - 1))) return 0;
    if (p < 1 || PyUnicode_READ(kind, data, p - 1) != '\n') return 0;
    Py_ssize_t above_end = p - 1; /* the line feed ending the line above */
    Py_ssize_t above = prev_newline(kind, data, 0, above_end - 1) + 1;
    Py_ssize_t first = above, last = above_end;
    while (first < last && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, first))) first++;
    while (last > first && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, last - 1))) last--;
    if (last - first < 40 || !ends_inside_sentence(PyUnicode_READ(kind, data, last - 1))) return 0;
    return !item_line_at(kind, data, b, above);
}

static PyObject *item_line_starts(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *text;
    Py_ssize_t start, b;
    if (!PyArg_ParseTuple(args, "Unn", &text, &start, &b)) return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (start < 0) start = 0;
    if (b > n) b = n;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    if (start < b && item_line_at(kind, data, b, start) && append_index(out, start) < 0) goto error;
    for (Py_ssize_t p = next_newline(kind, data, start, b); p < b; p = next_newline(kind, data, p + 1, b)) {
        if (item_line_at(kind, data, b, p + 1) && append_index(out, p + 1) < 0) goto error;
    }
    return out;
error:
    Py_DECREF(out);
    return NULL;
}


/* ---------------------------------------------------------------------------------------------------------
 * `line_break_cuts(text, a, b, item_breaks)`: kireme/text/sentences.py `_line_break_cuts`. The sentence starts
 * after the single line breaks inside [a, b) that end a sentence: the breaks before item lines (item_breaks,
 * sorted, from `paragraph_breaks`) and the line ends of item, title and label lines (`item_line_at`), each
 * moved past the whitespace after it. None for a window outside the text (Python answers).
 */
static int compare_offsets(const void *x, const void *y) {
    Py_ssize_t p = *(const Py_ssize_t *)x, q = *(const Py_ssize_t *)y;
    return (p > q) - (p < q);
}

static int push_offset(Py_ssize_t **array, Py_ssize_t *count, Py_ssize_t *room, Py_ssize_t value) {
    if (*count == *room) {
        Py_ssize_t larger = *room ? *room * 2 : 64;
        Py_ssize_t *grown = PyMem_Realloc(*array, (size_t)larger * sizeof(Py_ssize_t));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        *array = grown;
        *room = larger;
    }
    (*array)[(*count)++] = value;
    return 0;
}

static PyObject *line_breaks_core(PyObject *text, Py_ssize_t a, Py_ssize_t b, PyObject *items) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (a < 0 || b > n || a > b) Py_RETURN_NONE;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t *ends = NULL, count = 0, room = 0;
    PyObject *out = NULL;
    /* the items of the whole text are sorted: bisect to the first at or after a (a text of many list items is
     * scanned in many spans) */
    Py_ssize_t lo = 0, hi = PyList_GET_SIZE(items);
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        Py_ssize_t p = PyLong_AsSsize_t(PyList_GET_ITEM(items, mid));
        if (p == -1 && PyErr_Occurred()) goto done;
        if (p < a) lo = mid + 1;
        else hi = mid;
    }
    for (Py_ssize_t i = lo; i < PyList_GET_SIZE(items); i++) {
        Py_ssize_t p = PyLong_AsSsize_t(PyList_GET_ITEM(items, i));
        if (p == -1 && PyErr_Occurred()) goto done;
        if (p < a) continue;
        if (p >= b) break;
        Py_ssize_t q = PyUnicode_READ(kind, data, p) == '\r' ? p + 1 : p;
        if (q + 1 < b && push_offset(&ends, &count, &room, q) < 0) goto done;
    }
    Py_ssize_t line_start = prev_newline(kind, data, 0, a - 1) + 1;
    /* an item line starts at line_start, or after a line break */
    for (Py_ssize_t p = line_start; p < b; p = next_newline(kind, data, p, b) + 1) {
        if (!item_line_at(kind, data, b, p)) continue;
        Py_ssize_t q = next_newline(kind, data, p, b);
        if (q >= b) continue;
        if (label_wrap_at(kind, data, b, p, q)) continue; /* a wrapped line that only looks like a label */
        Py_ssize_t at = q > 0 && PyUnicode_READ(kind, data, q - 1) == '\r' ? q - 1 : q;
        if (at >= a && push_offset(&ends, &count, &room, q) < 0) goto done;
    }
    if (count > 1) qsort(ends, (size_t)count, sizeof(Py_ssize_t), compare_offsets);
    out = PyList_New(0);
    if (out == NULL) goto done;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (i > 0 && ends[i] == ends[i - 1]) continue;
        Py_ssize_t e = ends[i] + 1;
        while (e < b && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, e))) e++;
        if (a < e && e < b && append_index(out, e) < 0) {
            Py_CLEAR(out);
            goto done;
        }
    }
done:
    PyMem_Free(ends);
    return out;
}

static PyObject *line_break_cuts(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *text, *items;
    Py_ssize_t a, b;
    if (!PyArg_ParseTuple(args, "UnnO!", &text, &a, &b, &PyList_Type, &items)) return NULL;
    return line_breaks_core(text, a, b, items);
}

/* ---------------------------------------------------------------------------------------------------------
 * `ends_with_heading(text, pos)` of kireme/text/headings.py: whether a cut at `pos` leaves a heading line at
 * the end of a chunk. At a line end, the line before the cut (trailing whitespace dropped) is a heading when
 * it is a Markdown heading (`#` to `######`, then a space or tab) or, with at most 40 characters after its
 * indentation, no bullet nor "</" first and a letter or digit in it, does not end in prose punctuation
 * (closing brackets looked through) and is no speaker's turn in a dialogue (`in_dialogue`); or a lead-in line (`is_lead_in_line`): it ends with ":", "：", "?" or
 * "？" and holds a letter or digit; or a paragraph's title with a full stop (`titled_line`).
 */
#define MAX_HEADING_CHARS 40
static const Py_UCS4 PROSE_MARKS[] = {0xFF0E, '.', 0x3001, 0xFF0C, ',', ';', 0xFF1B, ':', 0xFF1A, 0x2026}; /* ．.、，,;；:：… */

static int is_prose_end(Py_UCS4 c) { return is_terminator(c) || in_set(c, PROSE_MARKS, COUNT(PROSE_MARKS)); }

static int is_line_pad(Py_UCS4 c) { return c == ' ' || c == '\t' || c == 0x3000 || c == '\r'; }


/* `kireme.text.headings.is_lead_in_line` for the line [start, end) (end after its last non-space
 * character): a colon or question mark at its end, and a letter or digit in it */
static int lead_in_line(int kind, const void *data, Py_ssize_t start, Py_ssize_t end) {
    if (end <= start) return 0;
    Py_UCS4 last = PyUnicode_READ(kind, data, end - 1);
    if (last != ':' && last != 0xFF1A && last != '?' && last != 0xFF1F) return 0;
    for (Py_ssize_t k = start; k < end; k++)
        if (Py_UNICODE_ISALNUM(PyUnicode_READ(kind, data, k))) return 1;
    return 0;
}

static int is_lead_in_mark(Py_UCS4 c) { return c == ':' || c == 0xFF1A || c == '?' || c == 0xFF1F; }

/* `kireme.text.headings.at_line_edge`: pos at the text's start, right after a line feed, or at a line's end
 * (blanks before the line feed aside: `_ends_line`) */
static int at_line_edge(int kind, const void *data, Py_ssize_t n, Py_ssize_t pos) {
    if (pos <= 0 || PyUnicode_READ(kind, data, pos - 1) == '\n') return 1;
    Py_ssize_t i = pos - 1, j = pos;
    while (i >= 0 && is_line_pad(PyUnicode_READ(kind, data, i))) i--;
    if (i >= 0 && PyUnicode_READ(kind, data, i) == '\n') return 1;
    while (j < n && is_line_pad(PyUnicode_READ(kind, data, j))) j++;
    return j < n && PyUnicode_READ(kind, data, j) == '\n';
}

/* whether the line text from i (its first non-space character) to end opens with a Markdown ATX heading
 * mark: "#" to "######", then a space or tab */
static int atx_heading(int kind, const void *data, Py_ssize_t i, Py_ssize_t end) {
    Py_ssize_t j = i;
    while (j < end && PyUnicode_READ(kind, data, j) == '#') j++;
    if (j == i || j - i > 6 || j >= end) return 0;
    Py_UCS4 d = PyUnicode_READ(kind, data, j);
    return d == ' ' || d == '\t';
}

/* `kireme.text.headings.speaker_name` for the line [i, end) (its first and after its last non-space
 * character): a colon after a letter, a letter or digit after the colon, and the word before the colon (back
 * to a space or one of "])】）」>") holding no digit and not starting with 第: a chat or transcript turn
 * ("田中：了解です", "[10:17] Yamada: thanks"); next to another one (`in_dialogue`), no heading */
static const Py_UCS4 NAME_BOUNDS[] = {']', ')', 0x3011, 0xFF09, 0x300D, '>'}; /* ] ) 】 ） 」 > */

/* `kireme.text.headings.speaker_name`: 1 and the name's bounds in *ns, *ne when [i, end) is a speaker's turn */
static int speaker_name(int kind, const void *data, Py_ssize_t i, Py_ssize_t end, Py_ssize_t *ns, Py_ssize_t *ne) {
    for (Py_ssize_t p = i + 1; p < end; p++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, p);
        if ((c != ':' && c != 0xFF1A) || !Py_UNICODE_ISALPHA(PyUnicode_READ(kind, data, p - 1))) continue;
        int said = 0;
        for (Py_ssize_t k = p + 1; k < end && !said; k++) said = Py_UNICODE_ISALNUM(PyUnicode_READ(kind, data, k));
        if (!said) continue;
        Py_ssize_t s = p;
        while (s > i) {
            Py_UCS4 b = PyUnicode_READ(kind, data, s - 1);
            if (Py_UNICODE_ISSPACE(b) || in_set(b, NAME_BOUNDS, COUNT(NAME_BOUNDS))) break;
            s--;
        }
        if (PyUnicode_READ(kind, data, s) == 0x7B2C) continue; /* 第 */
        int digit = 0;
        for (Py_ssize_t k = s; k < p && !digit; k++) digit = Py_UNICODE_ISDIGIT(PyUnicode_READ(kind, data, k));
        if (!digit) {
            *ns = s;
            *ne = p;
            return 1;
        }
    }
    return 0;
}

/* kireme/text/headings.py `FAQ_LABELS`: the labels of a FAQ's questions and answers */
static const Py_UCS4 FAQ_LABELS[][9] = {
    {'Q', 0}, {'A', 0}, {'q', 0}, {'a', 0}, {0xFF31, 0}, {0xFF21, 0},
    {'Q', 'u', 'e', 's', 't', 'i', 'o', 'n', 0}, {'A', 'n', 's', 'w', 'e', 'r', 0},
    {'Q', 'U', 'E', 'S', 'T', 'I', 'O', 'N', 0}, {'A', 'N', 'S', 'W', 'E', 'R', 0},
    {0x8CEA, 0x554F, 0}, {0x56DE, 0x7B54, 0}, {0x554F, 0}, {0x554F, 0x3044, 0}, {0x7B54, 0}, {0x7B54, 0x3048, 0},
};

static int faq_label(int kind, const void *data, Py_ssize_t s, Py_ssize_t e) {
    for (size_t k = 0; k < COUNT(FAQ_LABELS); k++) {
        Py_ssize_t n = 0;
        while (FAQ_LABELS[k][n] != 0) n++;
        if (n != e - s) continue;
        Py_ssize_t j = 0;
        while (j < n && PyUnicode_READ(kind, data, s + j) == FAQ_LABELS[k][j]) j++;
        if (j == n) return 1;
    }
    return 0;
}

/* the speaker's name of the stripped part of [a, b): 1 and its bounds, else 0 */
static int stripped_speaker(int kind, const void *data, Py_ssize_t a, Py_ssize_t b, Py_ssize_t *ns, Py_ssize_t *ne) {
    while (a < b && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, a))) a++;
    while (b > a && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, b - 1))) b--;
    return a < b && speaker_name(kind, data, a, b, ns, ne);
}

/* kireme/text/headings.py `speaker_line` for the stripped part of [a, b): a turn whose name is no FAQ label */
static int speaker_line(int kind, const void *data, Py_ssize_t a, Py_ssize_t b) {
    Py_ssize_t ns, ne;
    return stripped_speaker(kind, data, a, b, &ns, &ne) && !faq_label(kind, data, ns, ne);
}

/* the nearest non-blank line above the one starting at `start` (`line_before`): its bounds in *a, *b (*b after its
 * last non-space character); 0 when there is none */
static int line_above(int kind, const void *data, Py_ssize_t start, Py_ssize_t *a, Py_ssize_t *b) {
    Py_ssize_t above = start;
    while (above > 0 && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, above - 1))) above--;
    if (above <= 0) return 0;
    *a = prev_newline(kind, data, 0, above - 1) + 1;
    *b = above;
    return 1;
}

/* the first non-blank line from `pos` on (`next_line_span`): its bounds in *a, *b (*b at its line feed or the
 * text's end); 0 when there is none */
static int line_below(int kind, const void *data, Py_ssize_t n, Py_ssize_t pos, Py_ssize_t *a, Py_ssize_t *b) {
    Py_ssize_t below = pos;
    while (below < n && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, below))) below++;
    if (below >= n) return 0;
    *a = below;
    *b = next_newline(kind, data, below, n);
    return 1;
}

/* kireme/text/headings.py `in_dialogue`: the line [start, end) is a turn next to another one (the nearest
 * non-blank line above or below it) */
static int in_dialogue(int kind, const void *data, Py_ssize_t n, Py_ssize_t start, Py_ssize_t end) {
    if (!speaker_line(kind, data, start, end)) return 0;
    Py_ssize_t a, b;
    if (line_above(kind, data, start, &a, &b) && speaker_line(kind, data, a, b)) return 1;
    return line_below(kind, data, n, end, &a, &b) && speaker_line(kind, data, a, b);
}

/* kireme/text/headings.py `stage_direction`: the stripped line [i, end) is wholly in brackets ("（一同うなずく）",
 * "(laughter)", 3 characters or more) and the nearest non-blank line above it is a speaker's turn */
static int stage_direction(int kind, const void *data, Py_ssize_t i, Py_ssize_t end, Py_ssize_t line_start) {
    if (end - i < 3) return 0;
    Py_UCS4 first = PyUnicode_READ(kind, data, i), last = PyUnicode_READ(kind, data, end - 1);
    if (!(first == 0xFF08 || first == '(') || !(last == 0xFF09 || last == ')')) return 0;
    Py_ssize_t a, b;
    return line_above(kind, data, line_start, &a, &b) && speaker_line(kind, data, a, b);
}

/* kireme/text/headings.py `_enumerator_kind` for the line [a, b): 1 where it opens (after its spaces) with a
 * parenthesised number, letter, katakana or kanji numeral of 1 to 3 characters, 2 with 1 to 3 digits and one
 * of . ． ) ） not followed by a digit, 0 otherwise */
static int enumerator_char(Py_UCS4 c) {
    return (c >= '0' && c <= '9') || (c >= 0xFF10 && c <= 0xFF19) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= 0xFF41 && c <= 0xFF5A) || (c >= 0xFF21 && c <= 0xFF3A) || (c >= 0x30A2 && c <= 0x30F3) ||
           (c >= 0xFF71 && c <= 0xFF9D) || in_set(c, KANJI_DIGITS, COUNT(KANJI_DIGITS));
}

static int is_any_digit(Py_UCS4 c) { return (c >= '0' && c <= '9') || (c >= 0xFF10 && c <= 0xFF19); }

static int enumerator_kind(int kind, const void *data, Py_ssize_t a, Py_ssize_t b) {
    while (a < b && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, a))) a++;
    if (a >= b) return 0;
    Py_UCS4 c = PyUnicode_READ(kind, data, a);
    Py_ssize_t j = a + 1;
    if (c == 0xFF08 || c == '(') {
        while (j < b && j - a <= 3 && enumerator_char(PyUnicode_READ(kind, data, j))) j++;
        if (j == a + 1 || j - a > 4 || j >= b) return 0;
        Py_UCS4 d = PyUnicode_READ(kind, data, j);
        return (d == 0xFF09 || d == ')') ? 1 : 0;
    }
    if (!is_any_digit(c)) return 0;
    while (j < b && j - a < 3 && is_any_digit(PyUnicode_READ(kind, data, j))) j++;
    if (j >= b) return 0;
    Py_UCS4 d = PyUnicode_READ(kind, data, j);
    if (d != '.' && d != 0xFF0E && d != ')' && d != 0xFF09) return 0;
    return (j + 1 < b && is_any_digit(PyUnicode_READ(kind, data, j + 1))) ? 0 : 2;
}

/* kireme/text/headings.py `in_list`: the line [start, end) opens with a number and the nearest non-blank
 * line above or below it with one of the same kind */
static int in_list(int kind, const void *data, Py_ssize_t n, Py_ssize_t start, Py_ssize_t end) {
    int own = enumerator_kind(kind, data, start, end);
    if (!own) return 0;
    Py_ssize_t a, b;
    if (line_above(kind, data, start, &a, &b) && enumerator_kind(kind, data, a, b) == own) return 1;
    return line_below(kind, data, n, end, &a, &b) && enumerator_kind(kind, data, a, b) == own;
}

/* headings.py `_CLOSING_NEXT`: the next non-blank line from pos is 以上 alone (spaces between and after) */
static int closing_word_next(int kind, const void *data, Py_ssize_t n, Py_ssize_t pos) {
    Py_ssize_t q, end;
    if (!line_below(kind, data, n, pos, &q, &end) || PyUnicode_READ(kind, data, q) != 0x4EE5) return 0; /* 以 */
    q++;
    while (q < end && (PyUnicode_READ(kind, data, q) == ' ' || PyUnicode_READ(kind, data, q) == 0x3000)) q++;
    if (q >= end || PyUnicode_READ(kind, data, q) != 0x4E0A) return 0; /* 上 */
    q++;
    while (q < end && (PyUnicode_READ(kind, data, q) == ' ' || PyUnicode_READ(kind, data, q) == 0x3000)) q++;
    if (q < end && PyUnicode_READ(kind, data, q) == '\r') q++;
    return q == end;
}

/* kireme/text/headings.py `titled_paragraph_line` for the line [line_start, end) (i: its first non-space
 * character, end: after its last), which `heading_at_end` has checked for a bullet, an item number, "</", its
 * length and a letter or digit: a letter or digit first, "." or "．" last right after a letter or digit, no
 * prose punctuation between but a period followed by a non-space ("2.2") and none of = < > { } ` (code), a
 * blank line or nothing above it and its body on the next line */
static int titled_line(int kind, const void *data, Py_ssize_t n, Py_ssize_t line_start, Py_ssize_t i, Py_ssize_t end) {
    Py_UCS4 last = PyUnicode_READ(kind, data, end - 1);
    if ((last != '.' && last != 0xFF0E) || end - i < 2 || !Py_UNICODE_ISALNUM(PyUnicode_READ(kind, data, i)) ||
        !Py_UNICODE_ISALNUM(PyUnicode_READ(kind, data, end - 2)))
        return 0;
    for (Py_ssize_t k = i + 1; k < end - 1; k++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, k);
        if (c == '=' || c == '<' || c == '>' || c == '{' || c == '}' || c == '`') return 0; /* code */
        if (is_prose_end(c) && !(c == '.' && !Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, k + 1)))) return 0;
    }
    if (line_start > 0) { /* the line above is blank */
        Py_ssize_t above = line_start - 2;
        while (above >= 0 && is_line_pad(PyUnicode_READ(kind, data, above))) above--;
        if (above >= 0 && PyUnicode_READ(kind, data, above) != '\n') return 0;
    }
    Py_ssize_t below = end;
    while (below < n && is_line_pad(PyUnicode_READ(kind, data, below))) below++;
    if (below >= n || PyUnicode_READ(kind, data, below) != '\n') return 0;
    below++;
    while (below < n && is_line_pad(PyUnicode_READ(kind, data, below))) below++;
    return below < n && PyUnicode_READ(kind, data, below) != '\n';
}

/* kireme/text/headings.py `adornment`: the character the line [start, end) repeats when it is a title's
 * underline or overline (three or more of one of `ADORNMENTS` from its first column, trailing " \t\r"
 * aside), else 0; *length: how many */
static const Py_UCS4 ADORNMENTS[] = {'=', '-', '~', '^', '"', '\'', '+', '*', '#', '_'}; /* no backtick: a fence */

/* a line that ends so is a sentence over a rule, not a title: . 。 ． , 、 ， ; ； … */
static const Py_UCS4 NO_TITLE_END[] = {'.', 0x3002, 0xFF0E, ',', 0x3001, 0xFF0C, ';', 0xFF1B, 0x2026};

static int is_adornment_pad(Py_UCS4 c) { return c == ' ' || c == '\t' || c == '\r'; }

static Py_UCS4 adornment(int kind, const void *data, Py_ssize_t start, Py_ssize_t end, Py_ssize_t *length) {
    while (end > start && is_adornment_pad(PyUnicode_READ(kind, data, end - 1))) end--;
    if (end - start < 3) return 0;
    Py_UCS4 mark = PyUnicode_READ(kind, data, start);
    if (!in_set(mark, ADORNMENTS, COUNT(ADORNMENTS))) return 0;
    for (Py_ssize_t k = start + 1; k < end; k++)
        if (PyUnicode_READ(kind, data, k) != mark) return 0;
    *length = end - start;
    return mark;
}

/* kireme/text/headings.py `underlined_title`: the line starting at `start` is a title underlined on the next
 * line (not indented, a letter or digit in it, no `NO_TITLE_END` last, the underline at least as long, and a
 * blank line, the text's start or an overline of the same character and at least the title's length right
 * above it) */
static int underlined_title(int kind, const void *data, Py_ssize_t n, Py_ssize_t start) {
    if (start >= n || Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, start))) return 0;
    Py_ssize_t title_end = next_newline(kind, data, start, n);
    /* most lines have no underline: the next line's first character tells, before anything is read */
    if (title_end + 1 >= n || !in_set(PyUnicode_READ(kind, data, title_end + 1), ADORNMENTS, COUNT(ADORNMENTS)))
        return 0;
    Py_ssize_t end = title_end;
    while (end > start && is_adornment_pad(PyUnicode_READ(kind, data, end - 1))) end--;
    if (end <= start || in_set(PyUnicode_READ(kind, data, end - 1), NO_TITLE_END, COUNT(NO_TITLE_END))) return 0;
    int alnum = 0;
    for (Py_ssize_t k = start; k < end && !alnum; k++) alnum = Py_UNICODE_ISALNUM(PyUnicode_READ(kind, data, k));
    if (!alnum) return 0;
    Py_ssize_t under_end = next_newline(kind, data, title_end + 1, n), under = 0, over = 0;
    Py_UCS4 mark = adornment(kind, data, title_end + 1, under_end, &under);
    if (!mark || under < end - start) return 0;
    if (start == 0) return 1;
    Py_ssize_t above_start = prev_newline(kind, data, 0, start - 2) + 1;
    int blank = 1;
    for (Py_ssize_t k = above_start; k < start - 1 && blank; k++)
        blank = Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, k));
    if (blank) return 1;
    return adornment(kind, data, above_start, start - 1, &over) == mark && over >= end - start;
}

/* kireme/text/headings.py `_in_underlined_title`: the line [start, end) (end after its last non-space
 * character) is an underlined title, its underline or its overline */
static int in_underlined_title(int kind, const void *data, Py_ssize_t n, Py_ssize_t start, Py_ssize_t end) {
    Py_ssize_t length = 0;
    if (!adornment(kind, data, start, end, &length)) return underlined_title(kind, data, n, start);
    if (start > 0 && underlined_title(kind, data, n, prev_newline(kind, data, 0, start - 2) + 1)) return 1;
    Py_ssize_t below = next_newline(kind, data, end, n);
    return below < n && underlined_title(kind, data, n, below + 1);
}

/* whether a cut at pos leaves a heading line at the end of a chunk (0 or 1) */
static int heading_at_end(int kind, const void *data, Py_ssize_t n, Py_ssize_t pos) {
    if (pos <= 0 || pos > n || !at_line_edge(kind, data, n, pos)) return 0;
    if (closing_word_next(kind, data, n, pos)) return 1; /* 以上 closes the block above: no chunk ends before it */
    Py_ssize_t end = pos;
    while (end > 0 && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, end - 1))) end--;
    if (end <= 0) return 0;
    Py_ssize_t line_start = prev_newline(kind, data, 0, end - 1) + 1, i = line_start;
    if (in_underlined_title(kind, data, n, line_start, end)) return 1;
    while (i < end && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, i))) i++;
    if (i >= end) return 0;
    Py_UCS4 c = PyUnicode_READ(kind, data, i);
    if (atx_heading(kind, data, i, end)) return 1;
    Py_UCS4 last = PyUnicode_READ(kind, data, end - 1);
    if (is_lead_in_mark(last)) /* a lead-in line: any length, a bullet first too; without a letter or digit
                                  no heading either */
        return lead_in_line(kind, data, line_start, end);
    if (in_set(c, BULLETS, COUNT(BULLETS)) || c == '-' || c == '*' || c == '+' || c == '>' || c == '|') return 0;
    /* numbered items (headings.py `_ITEM_START`): circled, parenthesized and dotted numbers, 一　 (a 号) */
    if ((c >= 0x2460 && c <= 0x249B) || (c >= 0x3251 && c <= 0x325F) || (c >= 0x32B1 && c <= 0x32BF) ||
        (c >= 0x2776 && c <= 0x2793))
        return 0;
    if (in_set(c, KANJI_DIGITS, COUNT(KANJI_DIGITS))) {
        Py_ssize_t j = i;
        while (j < end && in_set(PyUnicode_READ(kind, data, j), KANJI_DIGITS, COUNT(KANJI_DIGITS))) j++;
        if (j < end && (PyUnicode_READ(kind, data, j) == 0x3000 || PyUnicode_READ(kind, data, j) == ' ')) return 0;
    }
    if (c == 0x4EE5 && PyUnicode_READ(kind, data, end - 1) == 0x4E0A) { /* 以上 closes a 記 block: no heading */
        Py_ssize_t j = i + 1;
        while (j < end - 1 && (PyUnicode_READ(kind, data, j) == ' ' || PyUnicode_READ(kind, data, j) == 0x3000)) j++;
        if (j == end - 1) return 0;
    }
    if (end - i > MAX_HEADING_CHARS) return 0;
    if (c == '<' && i + 1 < end && PyUnicode_READ(kind, data, i + 1) == '/') return 0; /* a closing tag */
    int alnum = 0; /* a closing fence or a brace holds no letter or digit: what it closes is above it */
    for (Py_ssize_t k = i; k < end && !alnum; k++) alnum = Py_UNICODE_ISALNUM(PyUnicode_READ(kind, data, k));
    if (!alnum) return 0;
    Py_ssize_t r = end;
    while (r > i && is_closer(PyUnicode_READ(kind, data, r - 1))) r--;
    if (r > i && is_prose_end(PyUnicode_READ(kind, data, r - 1)) && !titled_line(kind, data, n, line_start, i, end))
        return 0; /* prose, unless a paragraph's title with a full stop ("Cell culture.") */
    return !in_dialogue(kind, data, n, line_start, end) && !in_list(kind, data, n, line_start, end) &&
           !stage_direction(kind, data, i, end, line_start);
}

static PyObject *ends_with_heading(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *text;
    Py_ssize_t pos;
    if (!PyArg_ParseTuple(args, "Un", &text, &pos)) return NULL;
    if (heading_at_end(PyUnicode_KIND(text), PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text), pos)) Py_RETURN_TRUE;
    Py_RETURN_FALSE;
}

/* ---------------------------------------------------------------------------------------------------------
 * `trim_span(text, a, b, simple)`: `_trim` of kireme/pack.py where it needs no grapheme scan. The span without
 * its leading and trailing whitespace (`str.isspace`), `(e, e)` when that is all it holds; where whitespace
 * was dropped, the new edge must lie between two characters of `simple` (kireme.text.graphemes'
 * characters that never join a cluster), else None: Python decides that span (it may learn a character).
 */
/* The BMP characters found in the `simple` set so far, one bit each: a character once found there is read
 * off this bitmap instead of being made into a string and looked up again. The set only grows (graphemes
 * adds the characters it learns, never removes one), so a bit never goes stale; the memo belongs to one set
 * object (held, so its address is not reused) and starts afresh when another set is passed. */
static unsigned char KNOWN_SIMPLE[0x10000 / 8];
static PyObject *known_simple_set = NULL;

static int is_simple(Py_UCS4 c, PyObject *simple) {
    if (simple != known_simple_set) {
        Py_XSETREF(known_simple_set, Py_NewRef(simple));
        memset(KNOWN_SIMPLE, 0, sizeof(KNOWN_SIMPLE));
    }
    if (c < 0x10000 && (KNOWN_SIMPLE[c >> 3] >> (c & 7)) & 1) return 1;
    PyObject *ch = PyUnicode_FromOrdinal(c);
    if (ch == NULL) return -1;
    int found = PySet_Contains(simple, ch);
    Py_DECREF(ch);
    if (found == 1 && c < 0x10000) KNOWN_SIMPLE[c >> 3] |= (unsigned char)(1u << (c & 7));
    return found;
}

static int both_simple(int kind, const void *data, Py_ssize_t p, PyObject *simple) {
    for (Py_ssize_t k = p - 1; k <= p; k++) {
        int found = is_simple(PyUnicode_READ(kind, data, k), simple);
        if (found != 1) return found;
    }
    return 1;
}

/* the span [a, b) trimmed into *s, *e: 1, or 0 where Python must decide, -1 on an error */
static int trim_core(int kind, const void *data, Py_ssize_t a, Py_ssize_t b, PyObject *simple, Py_ssize_t *s_out,
                     Py_ssize_t *e_out) {
    Py_ssize_t s = a, e = b;
    while (s < b && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, s))) s++;
    while (e > s && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, e - 1))) e--;
    if (s >= e) {
        *s_out = *e_out = e;
        return 1;
    }
    int ok;
    if (s > a && (ok = both_simple(kind, data, s, simple)) != 1) return ok;
    if (e < b && (ok = both_simple(kind, data, e, simple)) != 1) return ok;
    *s_out = s;
    *e_out = e;
    return 1;
}

static PyObject *trim_span(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *text, *simple;
    Py_ssize_t a, b;
    if (!PyArg_ParseTuple(args, "UnnO!", &text, &a, &b, &PySet_Type, &simple)) return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (a < 0 || b > n || a > b) Py_RETURN_NONE; /* Python's own answer for spans outside the text */
    Py_ssize_t s, e;
    int ok = trim_core(PyUnicode_KIND(text), PyUnicode_DATA(text), a, b, simple, &s, &e);
    if (ok < 0) return NULL;
    if (ok == 0) Py_RETURN_NONE;
    return Py_BuildValue("(nn)", s, e);
}


/* `all_simple(text, cuts, simple)`: kireme/text/graphemes.py `CutFilter.keep`'s common case: whether every cut
 * lies strictly inside the text between two characters of `simple` (then none splits a grapheme cluster and
 * all are kept). False sends the list to Python, which checks (and learns) the other characters. */
static PyObject *all_simple(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *text, *cuts, *simple;
    if (!PyArg_ParseTuple(args, "UO!O!", &text, &PyList_Type, &cuts, &PySet_Type, &simple)) return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(cuts); i++) {
        Py_ssize_t p = PyNumber_AsSsize_t(PyList_GET_ITEM(cuts, i), PyExc_OverflowError);
        if (p == -1 && PyErr_Occurred()) return NULL;
        if (p <= 0 || p >= n) Py_RETURN_FALSE;
        int ok = both_simple(kind, data, p, simple);
        if (ok < 0) return NULL;
        if (!ok) Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

/* ---------------------------------------------------------------------------------------------------------
 * `merge_run(text, bounds, i, budget, keep_headings, simple, out, heading_ends=None)`: kireme/pack.py
 * `_Packer.merge_pieces`'s loop where sizes are characters and the heading test is `ends_with_heading` (the one
 * above) or, given `heading_ends`, `HeadingEnds` (parsed Markdown headings). From piece i,
 * each chunk takes as many whole pieces as fit in `budget`, moved back before a heading line at its end, and
 * its trimmed span is appended to `out`. Stops at the first piece Python must handle (none fits whole, only
 * headings fit, a trim that needs the grapheme rules) and returns its index (len(bounds) - 1 when done), or
 * -2 - i where only heading or lead-in lines fit from piece i (the steps back over them taken already, so Python
 * goes straight to `_Packer.heading_with_body` instead of taking them again).
 */
static int bound_at(PyObject *bounds, Py_ssize_t k, Py_ssize_t *out) {
    Py_ssize_t x = PyNumber_AsSsize_t(PyList_GET_ITEM(bounds, k), PyExc_OverflowError);
    if (x == -1 && PyErr_Occurred()) return -1;
    *out = x;
    return 0;
}

/* `kireme.text.headings.HeadingEnds`: the text before pos, trailing whitespace aside, ends at a heading end */
static int heading_end_in(int kind, const void *data, Py_ssize_t pos, PyObject *ends) {
    while (pos > 0 && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, pos - 1))) pos--;
    PyObject *key = PyLong_FromSsize_t(pos);
    if (key == NULL) return -1;
    int found = PySet_Contains(ends, key);
    Py_DECREF(key);
    return found;
}

/* `kireme.pack.answer_cut_inside`: whether the lead-in line ending at lead_end (whitespace after it aside) asks a
 * question ("?", "？") and [a, b) holds a sentence end ("。！？", or ".!?" before whitespace) with more text after it
 * before b: then the question keeps the first sentences of its answer */
/* kireme/pack.py `_dialogue` (two `speaker_line`s): the question line ending at end and the line starting at a (before b) are two
 * speakers' turns, neither labelled as a FAQ's */
static int dialogue(int kind, const void *data, Py_ssize_t end, Py_ssize_t a, Py_ssize_t b) {
    return speaker_line(kind, data, prev_newline(kind, data, 0, end - 1) + 1, end) &&
           speaker_line(kind, data, a, next_newline(kind, data, a, b));
}

static int answer_cut_inside(int kind, const void *data, Py_ssize_t lead_end, Py_ssize_t a, Py_ssize_t b) {
    Py_ssize_t end = lead_end;
    while (end > 0 && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, end - 1))) end--;
    if (end <= 0) return 0;
    Py_UCS4 last = PyUnicode_READ(kind, data, end - 1);
    if (last != '?' && last != 0xFF1F) return 0;
    if (dialogue(kind, data, end, a, b)) return 0;
    for (Py_ssize_t i = a; i < b - 1; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        int ends = c == 0x3002 || c == 0xFF01 || c == 0xFF1F;
        if (!ends && (c == '.' || c == '!' || c == '?')) ends = Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, i + 1));
        if (!ends) continue;
        for (Py_ssize_t j = i + 1; j < b; j++) {
            if (!Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, j))) return 1;
        }
    }
    return 0;
}

/* `kireme.text.headings.LEAD_IN_LINES_MAX`: the lines above a lead-in line that may go with it */
#define LEAD_IN_LINES_MAX 8

/* `kireme.text.headings._ends_a_sentence`: whether the line [start, end) (its trailing whitespace aside) ends
 * a sentence: a terminator, a full stop or a colon, then closing marks; or a closing Japanese quote */
static int line_ends_sentence(int kind, const void *data, Py_ssize_t start, Py_ssize_t end) {
    while (end > start && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, end - 1))) end--;
    while (end > start && is_closer(PyUnicode_READ(kind, data, end - 1))) {
        Py_UCS4 c = PyUnicode_READ(kind, data, end - 1);
        if (c == 0x300D || c == 0x300F || c == 0xFF09) return 1; /* 」 』 ） */
        end--;
    }
    if (end <= start) return 0;
    Py_UCS4 c = PyUnicode_READ(kind, data, end - 1);
    return is_terminator(c) || c == FULLWIDTH_STOP || c == '.' || c == ':' || c == 0xFF1A;
}

/* `kireme.text.headings._opens_with_letter`: whether the line [start, end) starts, after spaces, tabs and
 * ideographic spaces, with a letter */
static int line_opens_with_letter(int kind, const void *data, Py_ssize_t start, Py_ssize_t end) {
    while (start < end) {
        Py_UCS4 c = PyUnicode_READ(kind, data, start);
        if (c != ' ' && c != '\t' && c != 0x3000) break;
        start++;
    }
    return start < end && Py_UNICODE_ISALPHA(PyUnicode_READ(kind, data, start));
}

/* `kireme.text.headings.lead_in_sentence_start`: the start of the hard-wrapped sentence a lead-in line that
 * starts at start ends, by whole lines (prose lines above it that end no sentence, up to LEAD_IN_LINES_MAX) */
static Py_ssize_t lead_in_sentence_start(int kind, const void *data, Py_ssize_t n, Py_ssize_t start) {
    Py_ssize_t line = start;
    for (int moved = 0; moved <= LEAD_IN_LINES_MAX; moved++) {
        if (line <= 0 || !line_opens_with_letter(kind, data, line, n)) return line;
        Py_ssize_t above = line >= 2 ? prev_newline(kind, data, 0, line - 2) + 1 : 0;
        if (!line_opens_with_letter(kind, data, above, line - 1) || line_ends_sentence(kind, data, above, line - 1))
            return line;
        if (moved == LEAD_IN_LINES_MAX) break;
        line = above;
    }
    return start;
}

/* `kireme.text.headings.lead_in_line_start`: where the line the text before pos ends with (trailing whitespace
 * aside) starts, when it is a lead-in line (`lead_in_line`) and no "#" heading, with the lines of a
 * hard-wrapped sentence above it (`lead_in_sentence_start`); -1 otherwise */
static Py_ssize_t lead_in_line_start(int kind, const void *data, Py_ssize_t n, Py_ssize_t pos) {
    while (pos > 0 && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, pos - 1))) pos--;
    if (pos <= 0) return -1;
    Py_UCS4 last = PyUnicode_READ(kind, data, pos - 1);
    if (!is_lead_in_mark(last)) return -1;
    Py_ssize_t start = prev_newline(kind, data, 0, pos - 1) + 1, i = start;
    while (i < pos && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, i))) i++;
    if (atx_heading(kind, data, i, pos)) return -1;
    return lead_in_line(kind, data, start, pos) ? lead_in_sentence_start(kind, data, n, start) : -1;
}

static PyObject *merge_run(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *text, *bounds, *simple, *out, *heading_ends = Py_None;
    Py_ssize_t i, budget;
    int keep_headings;
    if (!PyArg_ParseTuple(args, "UO!nnpO!O!|O", &text, &PyList_Type, &bounds, &i, &budget, &keep_headings,
                          &PySet_Type, &simple, &PyList_Type, &out, &heading_ends)) {
        return NULL;
    }
    if (heading_ends != Py_None && !PyAnySet_Check(heading_ends)) {
        PyErr_SetString(PyExc_TypeError, "merge_run: heading_ends must be a set of offsets or None");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(bounds), length = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text), headings_only = 0;
    const void *data = PyUnicode_DATA(text);
    while (i >= 0 && i < n - 1) {
        Py_ssize_t start;
        if (bound_at(bounds, i, &start) < 0) return NULL;
        /* the furthest piece end within the budget: bisect_right(bounds, start + budget, i + 1, n) - 1 */
        Py_ssize_t limit = start + budget, lo = i + 1, hi = n;
        while (lo < hi) {
            Py_ssize_t mid = lo + (hi - lo) / 2, value;
            if (bound_at(bounds, mid, &value) < 0) return NULL;
            if (limit < value) hi = mid;
            else lo = mid + 1;
        }
        Py_ssize_t k = lo - 1, end;
        if (k <= i) break;
        if (bound_at(bounds, k, &end) < 0) return NULL;
        if (end < 0 || end > length || start < 0 || start > end) break; /* Python's answer, whatever it is */
        if (k < n - 1 && keep_headings) {
            while (k > i) {
                int heading = heading_ends == Py_None ? heading_at_end(kind, data, length, end)
                                                      : heading_end_in(kind, data, end, heading_ends);
                if (heading < 0) return NULL;
                if (!heading) break;
                Py_ssize_t line = lead_in_line_start(kind, data, length, end);
                Py_ssize_t back = k - 1;
                if (line >= 0) { /* `_Packer.cut_before_heading` and `_Packer.lead_in_stays` */
                    Py_ssize_t before, after;
                    if (bound_at(bounds, back, &before) < 0 || bound_at(bounds, k + 1, &after) < 0) return NULL;
                    if (!at_line_edge(kind, data, length, before)) {
                        /* a lead-in line in several pieces: the bound where it starts, after bounds[i] */
                        back = k - 2;
                        while (back > i) {
                            if (bound_at(bounds, back, &before) < 0) return NULL;
                            if (before <= line && at_line_edge(kind, data, length, before)) break;
                            back--;
                        }
                        if (back <= i) break; /* the cut would fall inside a line */
                    }
                    /* the sizes without the whitespace at either end */
                    Py_ssize_t first = before, from = end, to = after;
                    while (first < end && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, first))) first++;
                    while (from < after && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, from))) from++;
                    while (to > from && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, to - 1))) to--;
                    int answer = answer_cut_inside(kind, data, end, from, to);
                    if (answer < 0) return NULL;
                    if (!answer && to - from <= budget && budget < to - (first < line ? first : line)) {
                        /* `_Packer.lead_in_moves_alone`: a lead-in line inside the piece before it, with text
                         * before it, opens the next chunk when it fits with what it introduces */
                        if (before < line && first < line && to - line <= budget) {
                            PyObject *moved = PyLong_FromSsize_t(line);
                            if (moved == NULL || PyList_SetItem(bounds, k, moved) < 0) return NULL;
                            end = line;
                            continue;
                        }
                        break;
                    }
                }
                k = back;
                if (bound_at(bounds, k, &end) < 0) return NULL;
            }
            if (k == i) { /* only heading or lead-in lines fit: Python emits them with their body's start */
                headings_only = 1;
                break;
            }
        }
        Py_ssize_t s, e;
        int ok = trim_core(kind, data, start, end, simple, &s, &e);
        if (ok < 0) return NULL;
        if (ok == 0) break;
        if (s < e) {
            if (append_pair(out, s, e) < 0) return NULL;
        }
        i = k;
    }
    return PyLong_FromSsize_t(headings_only ? -2 - i : i);
}

/* ---------------------------------------------------------------------------------------------------------
 * `drop_inside(cuts, starts, ends)`: kireme/structure/layout.py `_drop_inside`, the same answers: `cuts`
 * (sorted) without those inside a protected span (`starts[i] < cut < ends[i]`, a span read up to one after the
 * next one's start), only the spans among the cuts visited (bisection on the sequences as they are). `cuts`
 * itself when none is dropped.
 */
static int seq_at(PyObject *seq, Py_ssize_t k, Py_ssize_t *out) {
    Py_ssize_t x = PyNumber_AsSsize_t(PySequence_Fast_GET_ITEM(seq, k), PyExc_OverflowError);
    if (x == -1 && PyErr_Occurred()) return -1;
    *out = x;
    return 0;
}

/* the first index in [lo, hi) whose value is > x (`right`) or >= x (not `right`) */
static int bisect_seq(PyObject *seq, Py_ssize_t x, Py_ssize_t lo, Py_ssize_t hi, int right, Py_ssize_t *out) {
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2, value;
        if (seq_at(seq, mid, &value) < 0) return -1;
        if (right ? x < value : x <= value) hi = mid;
        else lo = mid + 1;
    }
    *out = lo;
    return 0;
}

static PyObject *drop_inside(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *cuts, *starts_in, *ends_in;
    if (!PyArg_ParseTuple(args, "O!OO", &PyList_Type, &cuts, &starts_in, &ends_in)) return NULL;
    PyObject *starts = PySequence_Fast(starts_in, "drop_inside: starts must be a sequence");
    if (starts == NULL) return NULL;
    PyObject *ends = PySequence_Fast(ends_in, "drop_inside: ends must be a sequence");
    if (ends == NULL) {
        Py_DECREF(starts);
        return NULL;
    }
    PyObject *out = NULL, *result = NULL;
    Py_ssize_t n = PyList_GET_SIZE(cuts), m = PySequence_Fast_GET_SIZE(starts);
    if (PySequence_Fast_GET_SIZE(ends) != m) {
        PyErr_SetString(PyExc_ValueError, "drop_inside: starts and ends of different lengths");
        goto done;
    }
    if (m == 0 || n == 0) {
        result = Py_NewRef(cuts);
        goto done;
    }
    Py_ssize_t first_cut, last_cut, first, last, kept = 0;
    if (seq_at(cuts, 0, &first_cut) < 0 || seq_at(cuts, n - 1, &last_cut) < 0) goto done;
    if (bisect_seq(starts, first_cut, 0, m, 0, &first) < 0 || bisect_seq(starts, last_cut, 0, m, 0, &last) < 0)
        goto done;
    first = first > 0 ? first - 1 : 0;
    for (Py_ssize_t i = first; i < last; i++) {
        Py_ssize_t start, stop, lo, hi;
        if (seq_at(starts, i, &start) < 0 || seq_at(ends, i, &stop) < 0) goto done;
        if (i + 1 < m) {
            Py_ssize_t next;
            if (seq_at(starts, i + 1, &next) < 0) goto done;
            if (next + 1 < stop) stop = next + 1;
        }
        if (bisect_seq(cuts, start, kept, n, 1, &lo) < 0 || bisect_seq(cuts, stop, lo, n, 0, &hi) < 0) goto done;
        if (lo < hi) {
            if (out == NULL && (out = PyList_New(0)) == NULL) goto done;
            for (Py_ssize_t k = kept; k < lo; k++) {
                if (PyList_Append(out, PyList_GET_ITEM(cuts, k)) < 0) goto done;
            }
            kept = hi;
        }
    }
    if (!kept) {
        result = Py_NewRef(cuts);
        goto done;
    }
    for (Py_ssize_t k = kept; k < n; k++) {
        if (PyList_Append(out, PyList_GET_ITEM(cuts, k)) < 0) goto done;
    }
    result = Py_NewRef(out);
done:
    Py_XDECREF(out);
    Py_DECREF(starts);
    Py_DECREF(ends);
    return result;
}

/* ---------------------------------------------------------------------------------------------------------
 * `optimal_back(total, ends, limits, ranks, cut_cost, hard, target, min_size, mix_cost, min_size_cost)`:
 * kireme/pack.py `_dp_back`, the dynamic programme of the optimal packer, with the same arithmetic in the same
 * order (so the same costs to the last bit): for each reachable candidate i the chunks (i, k) it may end at.
 * Returns `(back, steps)`.
 */
static int ssize_array(PyObject *list, Py_ssize_t n, Py_ssize_t *out) {
    for (Py_ssize_t k = 0; k < n; k++) {
        Py_ssize_t x = PyNumber_AsSsize_t(PyList_GET_ITEM(list, k), PyExc_OverflowError);
        if (x == -1 && PyErr_Occurred()) return -1;
        out[k] = x;
    }
    return 0;
}

static PyObject *optimal_back(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *total_l, *ends_l, *limits_l, *ranks_l, *cost_l, *hard_l;
    double target, mix_cost, min_size_cost;
    Py_ssize_t min_size;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!dndd", &PyList_Type, &total_l, &PyList_Type, &ends_l, &PyList_Type,
                          &limits_l, &PyList_Type, &ranks_l, &PyList_Type, &cost_l, &PyList_Type, &hard_l, &target,
                          &min_size, &mix_cost, &min_size_cost)) {
        return NULL;
    }
    Py_ssize_t m = PyList_GET_SIZE(total_l) - 1;
    if (m < 1 || PyList_GET_SIZE(ends_l) != m + 1 || PyList_GET_SIZE(limits_l) != m ||
        PyList_GET_SIZE(ranks_l) != m + 1 || PyList_GET_SIZE(cost_l) != m + 1 || PyList_GET_SIZE(hard_l) != m + 1) {
        PyErr_SetString(PyExc_ValueError, "optimal_back: lists of the wrong lengths");
        return NULL;
    }
    PyObject *result = NULL, *back_l = NULL;
    Py_ssize_t *ints = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(5 * (m + 1)));
    double *reals = PyMem_Malloc(sizeof(double) * (size_t)(2 * (m + 1)));
    char *hard = PyMem_Malloc((size_t)(m + 1));
    if (ints == NULL || reals == NULL || hard == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t *total = ints, *ends = ints + (m + 1), *limits = ints + 2 * (m + 1), *ranks = ints + 3 * (m + 1),
               *back = ints + 4 * (m + 1);
    double *cut_cost = reals, *dp = reals + (m + 1);
    if (ssize_array(total_l, m + 1, total) < 0 || ssize_array(ends_l, m + 1, ends) < 0 ||
        ssize_array(limits_l, m, limits) < 0 || ssize_array(ranks_l, m + 1, ranks) < 0) {
        goto done;
    }
    for (Py_ssize_t k = 0; k <= m; k++) {
        double c = PyFloat_AsDouble(PyList_GET_ITEM(cost_l, k));
        if (c == -1.0 && PyErr_Occurred()) goto done;
        cut_cost[k] = c;
        int h = PyObject_IsTrue(PyList_GET_ITEM(hard_l, k));
        if (h < 0) goto done;
        hard[k] = (char)h;
        dp[k] = Py_HUGE_VAL;
        back[k] = 0;
    }
    dp[0] = 0.0;
    Py_ssize_t steps = 0;
    for (Py_ssize_t i = 0; i < m; i++) {
        double base = dp[i];
        if (base == Py_HUGE_VAL) continue;
        Py_ssize_t limit = limits[i], strongest = (Py_ssize_t)1 << 30, rank_i = i > 0 ? ranks[i] : -1, k;
        int hard_inside = 0;
        for (k = i + 1; k <= m; k++) {
            if (ends[k] > limit && k > i + 1) break;
            if (k > i + 1) {
                Py_ssize_t r = ranks[k - 1];
                if (r < strongest) strongest = r;
                if (hard[k - 1]) hard_inside = 1;
            }
            Py_ssize_t rank_k = k < m ? ranks[k] : -1;
            int mixed = rank_i > strongest || rank_k > strongest;
            if (mixed && hard_inside) {
                if (rank_i > strongest) break;
                continue;
            }
            Py_ssize_t size = total[k] - total[i];
            double d = (target - (double)size) / target;
            volatile double square = d * d; /* rounded on its own, as in Python: never fused into the sum */
            double cost = base + square;
            cost = cost + cut_cost[k];
            if (mixed) cost += mix_cost;
            if (size < min_size && (i > 0 || k < m)) cost += min_size_cost;
            if (cost < dp[k]) {
                dp[k] = cost;
                back[k] = i;
            }
        }
        if (k > m) k = m; /* Python's loop variable stays at its last value */
        steps += k - i;
    }
    back_l = PyList_New(m + 1);
    if (back_l == NULL) goto done;
    for (Py_ssize_t k = 0; k <= m; k++) {
        PyObject *x = PyLong_FromSsize_t(back[k]);
        if (x == NULL) goto done;
        PyList_SET_ITEM(back_l, k, x);
    }
    result = Py_BuildValue("(On)", back_l, steps);
done:
    Py_XDECREF(back_l);
    PyMem_Free(ints);
    PyMem_Free(reals);
    PyMem_Free(hard);
    return result;
}

/* ---------------------------------------------------------------------------------------------------------
 * `char_windows(text, start, b, budget, simple, out, numbers)`: kireme/pack.py `_Packer.split_graphemes` where
 * sizes are characters: windows of `budget` characters from `start`, each cut where it fills the budget and
 * trimmed, appended to `out`. A cut is taken here only between two characters of `simple` (then no cluster
 * is split and `floor_boundary` answers the same position) and, with `numbers` (the packer has levels, so
 * `_outside_number` and `_kinsoku` may move it), not after a digit or a number separator, nor before closing
 * punctuation or after an opening bracket. Returns -1 when the span is done,
 * else the window start Python must go on from (a cut or a trim that needs the grapheme rules or the number
 * rule).
 */
static int is_number_char(Py_UCS4 c) { /* kireme/pack.py `_NUMBER_CHARS` */
    return (c >= '0' && c <= '9') || (c >= 0xFF10 && c <= 0xFF19) || c == ',' || c == '.' || c == 0xFF0C ||
           c == 0xFF0E;
}

/* a character after which `_outside_number` may move a cut: a number's, a joiner between digits
 * (`_NUMBER_JOINERS`), a currency sign (`_CURRENCY`) or a unit of a date, time or amount (`_JOINING_UNITS`) */
static int near_number(Py_UCS4 c) {
    static const Py_UCS4 OTHERS[] = {'/',    '-',    ':',    0xFF0F, 0xFF0D, 0xFF1A, 0xA5,   0xFFE5, '$',
                                     0xFF04, 0x20AC, 0xA3,   0x5E74, 0x6708, 0x65E5, 0x6642, 0x5206, 0x4E07,
                                     0x5343, 0x767E, 0x5104, 0x5146};
    return is_number_char(c) || in_set(c, OTHERS, COUNT(OTHERS));
}

/* kireme/pack.py `_NO_LINE_START` / `_NO_LINE_END`: a cut before these or after those is `_kinsoku`'s to move
 * (and one between two ASCII letters or digits `_word_edge`'s) */
static const Py_UCS4 NO_LINE_START[] = {
    0x3002, 0xff01, 0xff1f, 0x21, 0x3f, 0xff61, 0x203c, 0x2047, 0x2048, 0x2049, 0x0964, 0x0965, 0x061f, 0x06d4,
    0x1362, 0x104b, 0xff0e, 0x2e, 0x300d, 0x300f,
    0xff09, 0x29, 0x3011, 0x3009, 0x300b, 0x3015, 0xff3d, 0x5d, 0xff5d, 0x7d, 0x3019, 0x3017, 0x22, 0x27,
    0x201d, 0x2019, 0xbb, 0x203a, 0x3001, 0xff0c, 0x2c, 0x3b, 0xff1b, 0x3a, 0xff1a, 0x2026, 0x2025, 0x30fc};
static const Py_UCS4 NO_LINE_END[] = {0x300c, 0x300e, 0xff08, 0x28, 0x3010, 0x3008, 0x300a, 0x3014, 0xff3b,
                                      0x5b, 0xff5b, 0x7b, 0x3018, 0x3016, 0x201c, 0x2018, 0xab, 0x2039};

static PyObject *char_windows(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *text, *simple, *out;
    Py_ssize_t start, b, budget;
    int numbers;
    if (!PyArg_ParseTuple(args, "UnnnO!O!p", &text, &start, &b, &budget, &PySet_Type, &simple, &PyList_Type, &out,
                          &numbers)) {
        return NULL;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (start < 0 || b > n || budget < 1) return PyLong_FromSsize_t(start); /* Python's to answer */
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    while (start < b) {
        Py_ssize_t s, e;
        int ok = trim_core(kind, data, start, b, simple, &s, &e);
        if (ok < 0) return NULL;
        if (ok == 0) break;
        start = s;
        b = e;
        if (start >= b) return PyLong_FromLong(-1);
        if (start + budget >= b) { /* the rest fits */
            if (append_pair(out, start, b) < 0) return NULL;
            return PyLong_FromLong(-1);
        }
        Py_ssize_t cut = start + budget;
        ok = both_simple(kind, data, cut, simple);
        if (ok < 0) return NULL;
        if (ok == 0) break;
        if (numbers) { /* a cut `_outside_number` or `_kinsoku` may move: Python's */
            Py_UCS4 before = PyUnicode_READ(kind, data, cut - 1), after = PyUnicode_READ(kind, data, cut);
            int inside_word = before < 128 && after < 128 && Py_UNICODE_ISALNUM(before) && Py_UNICODE_ISALNUM(after);
            if (near_number(before) || inside_word || in_set(after, NO_LINE_START, COUNT(NO_LINE_START)) ||
                in_set(before, NO_LINE_END, COUNT(NO_LINE_END)))
                break;
        }
        ok = trim_core(kind, data, start, cut, simple, &s, &e);
        if (ok < 0) return NULL;
        if (ok == 0) break;
        if (s < e && append_pair(out, s, e) < 0) return NULL;
        start = cut;
    }
    return PyLong_FromSsize_t(start < b ? start : -1);
}

/* ---------------------------------------------------------------------------------------------------------
 * `paragraph_breaks(text)`: `_breaks` of kireme/text/sentences.py, the `_FAST_PARAGRAPH_BREAK` scan. At each
 * "\n": a blank line ("\n", spaces, tabs or U+3000, "\r"?, "\n"), or a line break before an item marker.
 * Returns (starts, block_starts, item_breaks): every break's start (the "\r" of a "\r\n"), 0 + the first
 * non-space character after each blank-line run + len(text), and the starts of the breaks before items.
 */
static int item_after_indent(int kind, const void *data, Py_ssize_t n, Py_ssize_t q) {
    while (q < n && is_indent(PyUnicode_READ(kind, data, q))) q++;
    return q < n && item_marker_at(kind, data, n, q);
}

static PyObject *paragraph_breaks(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *text;
    if (!PyArg_ParseTuple(args, "U", &text)) return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    PyObject *starts = PyList_New(0), *blocks = PyList_New(0), *items = PyList_New(0);
    if (starts == NULL || blocks == NULL || items == NULL) goto error;
    if (append_index(blocks, 0) < 0) goto error;
    Py_ssize_t last_block = -1;
    Py_ssize_t p = 0;
    while ((p = next_newline(kind, data, p, n)) < n) {
        Py_ssize_t start = (p > 0 && PyUnicode_READ(kind, data, p - 1) == '\r') ? p - 1 : p;
        Py_ssize_t q = p + 1;
        while (q < n && is_indent(PyUnicode_READ(kind, data, q))) q++;
        if (q < n && PyUnicode_READ(kind, data, q) == '\r') q++;
        if (q < n && PyUnicode_READ(kind, data, q) == '\n') { /* a blank line: the block after it */
            Py_ssize_t end = q + 1, next = end;
            while (next < n && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, next))) next++;
            if (append_index(starts, start) < 0) goto error;
            if (next > 0 && next < n && next != last_block) {
                if (append_index(blocks, next) < 0) goto error;
                last_block = next;
            }
            p = end;
            continue;
        }
        if (item_after_indent(kind, data, n, p + 1)) {
            if (append_index(starts, start) < 0 || append_index(items, start) < 0) goto error;
        }
        p++;
    }
    if (append_index(blocks, n) < 0) goto error;
    return Py_BuildValue("(NNN)", starts, blocks, items);
error:
    Py_XDECREF(starts);
    Py_XDECREF(blocks);
    Py_XDECREF(items);
    return NULL;
}

static PyObject *vocabulary(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    /* the marks compiled in, for the test that keeps them equal to kireme.text.marks */
    PyObject *term = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, TERMINATORS, COUNT(TERMINATORS));
    PyObject *close = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, CLOSERS, COUNT(CLOSERS));
    PyObject *open = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, OPENERS, COUNT(OPENERS));
    PyObject *closes = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, OPENER_CLOSES, COUNT(OPENER_CLOSES));
    if (term == NULL || close == NULL || open == NULL || closes == NULL) {
        Py_XDECREF(term);
        Py_XDECREF(close);
        Py_XDECREF(open);
        Py_XDECREF(closes);
        return NULL;
    }
    return Py_BuildValue("(NNNN)", term, close, open, closes);
}



/* ---------------------------------------------------------------------------------------------------------
 * `judge_periods(text, pending, a, b, caseless, abbreviations, may_end)`: kireme/text/sentences.py `_judged_end`
 * (with `_period_ends`) for the candidates the scanner left undecided whose first character is "." and whose
 * word before and first character after are plain: ASCII, kana, kanji, CJK or general punctuation. Returns
 * (the sentence starts decided, the candidates left to Python): a "." after a space or tab (tokenised text),
 * "．!?", "！？" whose run ends with a closer, a word or next character in another script (its Unicode letter
 * classes) are Python's; "！" or "？" without a closer at its run's end ends its sentence.
 */

/* a character that is neither \p{Latin} nor \p{N} nor "." and not ASCII: kana, kanji, CJK symbols and
   punctuation (less the numerals U+3007, U+3021..3029, U+3038..303A), full-width and general punctuation */
static int plain_other(Py_UCS4 c) {
    return (c >= 0x3041 && c <= 0x30FF) || (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3001 && c <= 0x3006) ||
           (c >= 0x3008 && c <= 0x3020) || (c >= 0x3030 && c <= 0x3037) || (c >= 0x303B && c <= 0x303F) ||
           (c >= 0xFF01 && c <= 0xFF0F) || (c >= 0xFF1A && c <= 0xFF20) || (c >= 0xFF3B && c <= 0xFF40) ||
           (c >= 0xFF5B && c <= 0xFF65) || (c >= 0x2010 && c <= 0x2027) || (c >= 0x2030 && c <= 0x205E);
}

static int ascii_alpha(Py_UCS4 c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* a character outside ASCII that is neither \p{Latin} nor \p{N} (so `_WORD_BEFORE` stops at it) beyond
   `plain_other`: ° ± µ · × ÷, Greek and Cyrillic, arrows and mathematical operators ("0.98±0.02.", "10−5.",
   "Jβ2.6."); tests/test_speedups.py checks every one against the pattern */
static int word_break_other(Py_UCS4 c) {
    return c == 0xB0 || c == 0xB1 || c == 0xB5 || c == 0xB7 || c == 0xD7 || c == 0xF7 || (c >= 0x370 && c <= 0x4FF) ||
           (c >= 0x2190 && c <= 0x22FF);
}
static int ascii_digit(Py_UCS4 c) { return c >= '0' && c <= '9'; }

/* `_at_line_start`: only whitespace, or a Markdown heading's or quote's marks ("#", ">"), before pos on its line */
static int at_line_start(int kind, const void *data, Py_ssize_t pos) {
    for (Py_ssize_t k = pos - 1; k >= 0; k--) {
        Py_UCS4 c = PyUnicode_READ(kind, data, k);
        if (c == '\n') return 1;
        if (!(Py_UNICODE_ISSPACE(c) || c == '#' || c == '>')) return 0;
    }
    return 1;
}

/* `_is_initial`: a single capital after a capitalised word, another initial or a sentence start, or before
 * another initial (`_NEXT_INITIAL`: ". R." — "by J. R. Martinez") */
static int is_initial(int kind, const void *data, Py_ssize_t n, Py_ssize_t letter) {
    if (!Py_UNICODE_ISUPPER(PyUnicode_READ(kind, data, letter))) return 0;
    if (letter > 0 && !Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, letter - 1))) return 0;
    if (letter + 1 < n && PyUnicode_READ(kind, data, letter + 1) == '.') {
        Py_ssize_t k = letter + 2;
        while (k < n && (PyUnicode_READ(kind, data, k) == ' ' || PyUnicode_READ(kind, data, k) == '\t')) k++;
        if (k > letter + 2 && k + 1 < n) {
            Py_UCS4 next = PyUnicode_READ(kind, data, k);
            if (next >= 'A' && next <= 'Z' && PyUnicode_READ(kind, data, k + 1) == '.') return 1;
        }
    }
    Py_ssize_t lo = letter > 30 ? letter - 30 : 0, r = letter;
    while (r > lo && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, r - 1))) r--;
    if (r == lo) return 1;
    Py_UCS4 last = PyUnicode_READ(kind, data, r - 1);
    if (last == '.' || last == '!' || last == '?') return 1;
    Py_ssize_t q = r - 1;
    while (q > lo && !Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, q - 1))) q--;
    return Py_UNICODE_ISUPPER(PyUnicode_READ(kind, data, q)) != 0;
}

/* whether a word (lower case, ASCII) is in a set: 1, 0, or -1 on an error */
static int word_in(PyObject *set, const char *word, Py_ssize_t length) {
    PyObject *w = PyUnicode_FromStringAndSize(word, length);
    if (w == NULL) return -1;
    int found = PySet_Contains(set, w);
    Py_DECREF(w);
    return found;
}

#define UNDECIDED 2

/* kireme/text/sentences.py `_REFERENCE_WORDS`: before a number or a bracket their dot ends nothing */
static const char *const REFERENCE_WORDS[] = {"sec", "secs", "eq",  "eqs", "art", "arts", "ch",  "chap", "ref",
                                              "refs", "para", "paras", "tel", "ext", "fig", "figs", "tab", "no",
                                              "nos", "vol", "vols", "p",   "pp",  "ex",  "cl",  "sch", "reg",
                                              "ll",  "l"};

/* whether the `length` bytes at `word` are one of `words` */
static int listed_word(const char *word, Py_ssize_t length, const char *const *words, size_t count) {
    for (size_t k = 0; k < count; k++) {
        if ((Py_ssize_t)strlen(words[k]) == length && memcmp(words[k], word, (size_t)length) == 0) return 1;
    }
    return 0;
}

static int reference_word(const char *word, Py_ssize_t length) {
    return listed_word(word, length, REFERENCE_WORDS, COUNT(REFERENCE_WORDS));
}

/* a frozenset of the C strings `words` (for the tests that hold a C word list equal to its Python one) */
static PyObject *word_set(const char *const *words, size_t count) {
    PyObject *out = PyFrozenSet_New(NULL);
    if (out == NULL) return NULL;
    for (size_t k = 0; k < count; k++) {
        PyObject *w = PyUnicode_FromString(words[k]);
        if (w == NULL || PySet_Add(out, w) < 0) {
            Py_XDECREF(w);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(w);
    }
    return out;
}

static PyObject *reference_words(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return word_set(REFERENCE_WORDS, COUNT(REFERENCE_WORDS));
}

/* kireme/text/sentences.py `_LABEL_WORDS`: a heading's label word before its number ("ARTICLE 5.") */
static const char *const LABEL_WORDS[] = {"article", "section", "part", "chapter", "appendix", "annex", "schedule",
                                          "exhibit", "clause", "rule", "item", "step", "book", "title"};

static PyObject *label_words(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return word_set(LABEL_WORDS, COUNT(LABEL_WORDS));
}

static int is_label_strip(Py_UCS4 c) { return c == ' ' || c == '\t' || c == '#' || c == '>'; }

/* `_numbered_label`: 1 when only a heading's label word (`LABEL_WORDS`, any case; after the marks of a Markdown
 * heading or quote) comes before the number at word_start on its line, 0 when not, UNDECIDED where that one word
 * holds a character outside ASCII (Python's lower() decides it) */
static int numbered_label(int kind, const void *data, Py_ssize_t word_start) {
    Py_ssize_t start = word_start > 0 ? prev_newline(kind, data, 0, word_start - 1) + 1 : 0;
    if (word_start - start < 2) return 0;
    Py_UCS4 last = PyUnicode_READ(kind, data, word_start - 1), before = PyUnicode_READ(kind, data, word_start - 2);
    if ((last != ' ' && last != '\t') || !ascii_alpha(before)) return 0;
    Py_ssize_t a = start, b = word_start;
    while (a < b && is_label_strip(PyUnicode_READ(kind, data, a))) a++;
    while (b > a && is_label_strip(PyUnicode_READ(kind, data, b - 1))) b--;
    /* split() reads no word in the whitespace left at either end */
    while (a < b && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, a))) a++;
    while (b > a && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, b - 1))) b--;
    if (a >= b) return 0;
    for (Py_ssize_t k = a; k < b; k++) {
        if (Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, k))) return 0; /* two words or more */
    }
    if (b - a > 16) return 0; /* longer than any label word, lower-cased too (lower() never shortens a word) */
    char word[16];
    for (Py_ssize_t k = a; k < b; k++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, k);
        if (c >= 128) return UNDECIDED; /* Python's lower() may make it a label word ("K" for "k") */
        word[k - a] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
    }
    return listed_word(word, b - a, LABEL_WORDS, COUNT(LABEL_WORDS));
}

/* `_LABEL_GAP`: what follows the dot of a letter label at a line start ("A. ", "Q.\n") */
static int is_label_gap(Py_UCS4 c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/* `_period_ends` for the dot at `dot` (the candidate ends at `after`): 1, 0, UNDECIDED, or -1 on an error */
static int period_ends(int kind, const void *data, Py_ssize_t n, Py_ssize_t dot, Py_ssize_t after, int caseless,
                       PyObject *abbreviations, PyObject *may_end) {
    Py_ssize_t ink = after;
    while (ink < n && is_regex_space(PyUnicode_READ(kind, data, ink))) ink++;
    if (ink == n) return 1;
    Py_ssize_t lo = dot > 40 ? dot - 40 : 0, j = dot;
    while (j > lo) {
        Py_UCS4 c = PyUnicode_READ(kind, data, j - 1);
        if (c < 128) {
            if (!(ascii_alpha(c) || ascii_digit(c) || c == '.')) break;
            j--;
        } else if (plain_other(c) || word_break_other(c)) {
            break;
        } else {
            return UNDECIDED;
        }
    }
    Py_ssize_t length = dot - j, word_start = length ? j : dot;
    char word[41];
    int digits = length > 0, letters = 0, alpha = 1, dots = 0;
    for (Py_ssize_t k = 0; k < length; k++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, j + k);
        word[k] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
        if (!ascii_digit(c)) digits = 0;
        if (c == '.') {
            dots++;
        } else {
            letters++;
            if (!ascii_alpha(c)) alpha = 0;
        }
    }
    if (digits && length <= 3 && at_line_start(kind, data, word_start)) return 0; /* "1. " list marker */
    if (word_start > 1 && (PyUnicode_READ(kind, data, word_start - 1) == ' ' || PyUnicode_READ(kind, data, word_start - 1) == '\t') &&
        ascii_alpha(PyUnicode_READ(kind, data, word_start - 2))) {
        int roman = length > 0 && length <= 6;
        for (Py_ssize_t k = 0; k < length && roman; k++) roman = strchr("ivxlc", word[k]) != NULL;
        if ((digits && length <= 3) || roman) { /* "ARTICLE 5.", "PART II.": a heading's number */
            int label = numbered_label(kind, data, word_start);
            if (label != 0) return label == 1 ? 0 : UNDECIDED;
        }
    }
    if (length == 1 && ascii_alpha(PyUnicode_READ(kind, data, word_start)) && dot + 1 < n &&
        is_label_gap(PyUnicode_READ(kind, data, dot + 1)) &&
        at_line_start(kind, data, word_start))
        return 0; /* "A. " label, "b. " item */
    if (length >= 2 && length <= 4 && ascii_alpha(PyUnicode_READ(kind, data, word_start)) && dot + 1 < n &&
        is_label_gap(PyUnicode_READ(kind, data, dot + 1)) && at_line_start(kind, data, word_start)) {
        int numbered = 1;
        for (Py_ssize_t k = 1; k < length && numbered; k++) numbered = ascii_digit(PyUnicode_READ(kind, data, word_start + k));
        if (numbered) return 0; /* "Q3. " / "A12. ": a numbered FAQ label */
    }
    Py_UCS4 next = PyUnicode_READ(kind, data, ink);
    int starts, lower;
    if (next < 128) {
        lower = next >= 'a' && next <= 'z';
        starts = !lower; /* a capital, a digit, a quote or bracket, any other mark */
    } else if (plain_other(next)) {
        lower = 0;
        starts = 1;
    } else if (next >= 0x370 && next <= 0x4FF) { /* Greek, Cyrillic: no Latin letter, lower case as \p{Ll} */
        lower = Py_UNICODE_ISLOWER(next) && next != 0x37A; /* U+037A is lower case but a modifier (Lm) */
        starts = 1;
    } else {
        return UNDECIDED;
    }
    if (!(caseless ? (starts || lower) : (starts && !lower))) return 0;
    if (length == 0) return 1;
    if ((next >= '0' && next <= '9') || next == '(' || next == '[' || next == 0xA7 || next == '#') {
        /* "Smith et al. (2020)", "Sec. 4.2", "Eq. (3)": a citation or reference, not an end */
        if (reference_word(word, length)) return 0;
        int ends = word_in(may_end, word, length);
        if (ends != 0) return ends < 0 ? -1 : 0;
    }
    int found = word_in(may_end, word, length);
    if (found != 0) return found; /* 1, or -1 */
    found = word_in(abbreviations, word, length);
    if (found != 0) return found < 0 ? -1 : 0;
    Py_ssize_t stripped = length;
    while (stripped > 0 && word[stripped - 1] == '.') stripped--;
    if (stripped < length) {
        found = word_in(abbreviations, word, stripped);
        if (found != 0) return found < 0 ? -1 : 0;
    }
    if (length == 1 && ascii_alpha(PyUnicode_READ(kind, data, word_start)) && is_initial(kind, data, n, word_start))
        return 0; /* "J. R. Smith" */
    return !(dots > 0 && letters > 0 && alpha && letters <= 3); /* "U.S." does not end one, "$6.25." does */
}

/* kireme/text/sentences.py `_TOKENISED_DOT` (`(?<=\w[ \t])\.(?=[ \t]+[\p{Lu}"'“(\[])`, matched at the dot at s, the
 * text ending at b; the character before s is a space or a tab): 1 for a match ("games . When"), 0 for none,
 * UNDECIDED where it turns on a character outside ASCII (a word character before, a capital after) */
static int tokenised_dot(int kind, const void *data, Py_ssize_t s, Py_ssize_t b) {
    if (s < 2) return 0;
    Py_UCS4 word = PyUnicode_READ(kind, data, s - 2);
    if (word >= 128) return UNDECIDED;
    if (!(ascii_alpha(word) || ascii_digit(word) || word == '_')) return 0;
    Py_ssize_t p = s + 1;
    while (p < b && (PyUnicode_READ(kind, data, p) == ' ' || PyUnicode_READ(kind, data, p) == '\t')) p++;
    if (p == s + 1 || p >= b) return 0;
    Py_UCS4 c = PyUnicode_READ(kind, data, p);
    if ((c >= 'A' && c <= 'Z') || c == '"' || c == '\'' || c == 0x201C || c == '(' || c == '[') return 1;
    return c < 128 ? 0 : UNDECIDED;
}

static PyObject *judge_core(PyObject *text, PyObject *pending, Py_ssize_t a, Py_ssize_t b, int caseless,
                            PyObject *abbreviations, PyObject *may_end) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    PyObject *cuts = PyList_New(0), *left = PyList_New(0);
    if (cuts == NULL || left == NULL) goto error;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(pending); i++) {
        PyObject *item = PyList_GET_ITEM(pending, i);
        Py_ssize_t s, e;
        if (!PyTuple_Check(item) || !PyArg_ParseTuple(item, "nn", &s, &e)) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "judge_periods: pending holds (start, end) pairs");
            goto error;
        }
        int verdict = UNDECIDED;
        Py_UCS4 first = s >= 0 && s < n && e > s && e <= n ? PyUnicode_READ(kind, data, s) : 0;
        if (s > 0 && first == '.') {
            Py_UCS4 before = PyUnicode_READ(kind, data, s - 1);
            int spaced = before == ' ' || before == '\t';
            int tokenised = spaced ? tokenised_dot(kind, data, s, b) : 1;
            if (tokenised == 1) verdict = period_ends(kind, data, n, s, e, caseless, abbreviations, may_end);
            else if (tokenised == 0) verdict = 0; /* a "." after a space that starts no sentence: no candidate */
        } else if ((first == 0xFF01 || first == 0xFF1F) && !is_closer(PyUnicode_READ(kind, data, e - 1))) {
            verdict = 1; /* "！" or "？" with no closer at its run's end ends its sentence; after a closer,
                            a space and a lower-case letter it may not ('"Are you sure?" he asked'): Python's */
        } else if (first == '!' || first == '?') {
            /* an ASCII run of "!" and "?" alone that kireme/text/sentences.py `_inside_token` finds part of
               markup or code by the characters around it: `<!--`, `!=`, the end of a code span (`vec!`` `), a
               macro (`println!(`), an optional field (`name?:`); every other run stays Python's */
            int plain = 1;
            for (Py_ssize_t k = s; k < e; k++) {
                Py_UCS4 x = PyUnicode_READ(kind, data, k);
                if (x != '!' && x != '?') {
                    plain = 0;
                    break;
                }
            }
            if (plain) {
                Py_UCS4 before = s > a ? PyUnicode_READ(kind, data, s - 1) : 0;
                Py_UCS4 after = e < b ? PyUnicode_READ(kind, data, e) : ' ';
                if (first == '!' && before == '<') verdict = 0;
                else if (after == '=' || after == '`' || (after == '[' && PyUnicode_READ(kind, data, e - 1) == '!'))
                    verdict = 0;
                else if (before >= '!' && before <= '~' && (after == '(' || after == ';' || after == ':' || after == '{'))
                    verdict = 0; /* a code span or not, the same answer */
            }
        }
        if (verdict < 0) goto error;
        if (verdict == UNDECIDED) {
            if (PyList_Append(left, item) < 0) goto error;
            continue;
        }
        if (!verdict) continue;
        if (e < b && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, e))) {
            while (e < b && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, e))) e++;
        }
        if (a < e && e < b && append_index(cuts, e) < 0) goto error;
    }
    return Py_BuildValue("(NN)", cuts, left);
error:
    Py_XDECREF(cuts);
    Py_XDECREF(left);
    return NULL;
}

static PyObject *judge_periods(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *text, *pending, *abbreviations, *may_end;
    Py_ssize_t a, b;
    int caseless;
    if (!PyArg_ParseTuple(args, "UO!nnpO!O!", &text, &PyList_Type, &pending, &a, &b, &caseless, &PyFrozenSet_Type,
                          &abbreviations, &PyFrozenSet_Type, &may_end)) {
        return NULL;
    }
    return judge_core(text, pending, a, b, caseless, abbreviations, may_end);
}

/* ---------------------------------------------------------------------------------------------------------
 * `scan_run(text, a, b, block_starts, item_breaks, caseless, abbreviations, may_end)`: kireme/text/sentences.py
 * `SentenceIndex._scan`'s work on one run of blocks [a, b) in one call — `scan_sentence_cuts`, the "."
 * candidates `judge_periods` decides, `line_break_cuts`, and the block starts in (a, b] short of the text's end
 * (a blank line ends a sentence) — merged into one sorted list without repeats. Returns (cuts, quoted, pending),
 * pending holding the candidates only Python judges (`_judged_end`), or None where `line_break_cuts` would
 * leave the span to Python.
 */
static PyObject *scan_run(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *text, *blocks, *items, *abbreviations, *may_end;
    Py_ssize_t a, b;
    int caseless;
    if (!PyArg_ParseTuple(args, "UnnO!O!pO!O!", &text, &a, &b, &PyList_Type, &blocks, &PyList_Type, &items,
                          &caseless, &PyFrozenSet_Type, &abbreviations, &PyFrozenSet_Type, &may_end)) {
        return NULL;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    PyObject *scanned = NULL, *judged = NULL, *lines = NULL, *out = NULL, *merged = NULL;
    Py_ssize_t *offsets = NULL, count = 0, room = 0;
    Py_ssize_t *starts = NULL, nstarts = 0, starts_room = 0;
    if (collect_offsets(blocks, &starts, &nstarts, &starts_room) < 0) goto done;
    if ((scanned = scan_core(text, a, b, starts, nstarts)) == NULL) goto done;
    if ((lines = line_breaks_core(text, a, b, items)) == NULL) goto done;
    if (lines == Py_None) { /* a span line_break_cuts leaves to Python: so is the whole run */
        out = Py_NewRef(Py_None);
        goto done;
    }
    PyObject *cuts = PyTuple_GET_ITEM(scanned, 0), *quoted = PyTuple_GET_ITEM(scanned, 1);
    PyObject *pending = PyTuple_GET_ITEM(scanned, 2);
    if (PyList_GET_SIZE(pending) > 0) {
        if ((judged = judge_core(text, pending, a, b, caseless, abbreviations, may_end)) == NULL) goto done;
        pending = PyTuple_GET_ITEM(judged, 1);
    }
    if (collect_offsets(cuts, &offsets, &count, &room) < 0 || collect_offsets(lines, &offsets, &count, &room) < 0)
        goto done;
    if (judged != NULL && collect_offsets(PyTuple_GET_ITEM(judged, 0), &offsets, &count, &room) < 0) goto done;
    /* blank lines end sentences: the block starts in (a, b] short of the text's end, from the first after a */
    Py_ssize_t lo = 0, hi = nstarts;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (starts[mid] <= a) lo = mid + 1;
        else hi = mid;
    }
    for (Py_ssize_t i = lo; i < nstarts && starts[i] <= b; i++) {
        if (starts[i] < n && push_offset(&offsets, &count, &room, starts[i]) < 0) goto done;
    }
    if (count > 1) qsort(offsets, (size_t)count, sizeof(Py_ssize_t), compare_offsets);
    merged = PyList_New(0);
    if (merged == NULL) goto done;
    for (Py_ssize_t i = 0; i < count; i++) {
        if ((i == 0 || offsets[i] != offsets[i - 1]) && append_index(merged, offsets[i]) < 0) goto done;
    }
    out = PyTuple_Pack(3, merged, quoted, pending);
done:
    PyMem_Free(offsets);
    PyMem_Free(starts);
    Py_XDECREF(merged);
    Py_XDECREF(scanned);
    Py_XDECREF(judged);
    Py_XDECREF(lines);
    return out;
}

/* ---------------------------------------------------------------------------------------------------------
 * make_chunks: kireme/chunkers.py `Chunker.build_chunks`'s last step (`lazy_chunk` per span) for a whole plan at
 * once; IdField: a chunk's id, when it is read. A chunk id is the first 32 hex digits of SHA-256 over the
 * document's id prefix and "start\x1fend"; the prefix's whole 64-byte blocks are hashed once per document.
 */

typedef struct {
    uint32_t h[8];
    uint64_t length; /* bytes hashed so far */
    uint8_t buffer[64];
    size_t used;
} sha256_state;

static const uint32_t SHA256_K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROTR32(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha256_block(uint32_t h[8], const uint8_t *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++) {
        w[i] = ((uint32_t)p[4 * i] << 24) | ((uint32_t)p[4 * i + 1] << 16) | ((uint32_t)p[4 * i + 2] << 8) |
               (uint32_t)p[4 * i + 3];
    }
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROTR32(w[i - 15], 7) ^ ROTR32(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROTR32(w[i - 2], 17) ^ ROTR32(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = k + (ROTR32(e, 6) ^ ROTR32(e, 11) ^ ROTR32(e, 25)) + ((e & f) ^ (~e & g)) + SHA256_K[i] + w[i];
        uint32_t t2 = (ROTR32(a, 2) ^ ROTR32(a, 13) ^ ROTR32(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += k;
}

/* The same compression with the x86 SHA extensions (SHA-NI: every x86-64 processor made since about 2017–2020
 * has them), several times faster than the loop above; chosen at import where the processor reports them
 * (cpuid), else the loop above. Either gives the same digest (tests/test_speedups.py hashes with both). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define KIREME_SHA_NI 1

__attribute__((target("sha,sse4.1,ssse3"))) static void sha256_block_ni(uint32_t h[8], const uint8_t *p) {
    const __m128i swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL); /* big-endian words */
    __m128i tmp = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[0]), 0xB1);    /* CDAB */
    __m128i state1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[4]), 0x1B); /* EFGH */
    __m128i state0 = _mm_alignr_epi8(tmp, state1, 8);                                   /* ABEF */
    state1 = _mm_blend_epi16(state1, tmp, 0xF0);                                        /* CDGH */
    const __m128i abef = state0, cdgh = state1;
    __m128i w[4]; /* w[i % 4]: the message words 4i..4i+3 of the rounds at hand */
    for (int i = 0; i < 4; i++) w[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), swap);
    for (int i = 0; i < 16; i++) {
        __m128i msg = _mm_add_epi32(w[i & 3], _mm_loadu_si128((const __m128i *)&SHA256_K[4 * i]));
        state1 = _mm_sha256rnds2_epu32(state1, state0, msg);
        state0 = _mm_sha256rnds2_epu32(state0, state1, _mm_shuffle_epi32(msg, 0x0E));
        if (i < 12) { /* the words 4(i + 4)..4(i + 4) + 3, in the slot of the ones just used */
            __m128i next = _mm_add_epi32(_mm_sha256msg1_epu32(w[i & 3], w[(i + 1) & 3]),
                                         _mm_alignr_epi8(w[(i + 3) & 3], w[(i + 2) & 3], 4));
            w[i & 3] = _mm_sha256msg2_epu32(next, w[(i + 3) & 3]);
        }
    }
    state0 = _mm_add_epi32(state0, abef);
    state1 = _mm_add_epi32(state1, cdgh);
    tmp = _mm_shuffle_epi32(state0, 0x1B);           /* FEBA */
    state1 = _mm_shuffle_epi32(state1, 0xB1);        /* DCHG */
    state0 = _mm_blend_epi16(tmp, state1, 0xF0);     /* DCBA */
    state1 = _mm_alignr_epi8(state1, tmp, 8);        /* HGFE */
    _mm_storeu_si128((__m128i *)&h[0], state0);
    _mm_storeu_si128((__m128i *)&h[4], state1);
}

static int cpu_has_sha_ni(void) {
    unsigned int a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    if (!(c & (1u << 9)) || !(c & (1u << 19))) return 0; /* SSSE3, SSE4.1 */
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    return (b & (1u << 29)) != 0; /* SHA */
}
#endif

/* the compression in use: sha256_block, or sha256_block_ni where the processor has it */
static void (*sha256_compress)(uint32_t h[8], const uint8_t *p) = sha256_block;

static void sha256_init(sha256_state *s) {
    static const uint32_t start[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                      0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, start, sizeof(start));
    s->length = 0;
    s->used = 0;
}

static void sha256_update(sha256_state *s, const uint8_t *data, size_t n) {
    s->length += n;
    while (n > 0) {
        if (s->used == 0 && n >= 64) {
            sha256_compress(s->h, data);
            data += 64;
            n -= 64;
            continue;
        }
        size_t take = 64 - s->used < n ? 64 - s->used : n;
        memcpy(s->buffer + s->used, data, take);
        s->used += take;
        data += take;
        n -= take;
        if (s->used == 64) {
            sha256_compress(s->h, s->buffer);
            s->used = 0;
        }
    }
}

/* the first 16 bytes of the digest as 32 lower-case hex digits */
static void sha256_hex32(sha256_state *s, char out[32]) {
    uint64_t bits = s->length * 8;
    size_t used = s->used;
    s->buffer[used++] = 0x80;
    if (used > 56) {
        memset(s->buffer + used, 0, 64 - used);
        sha256_compress(s->h, s->buffer);
        used = 0;
    }
    memset(s->buffer + used, 0, 56 - used);
    for (int i = 0; i < 8; i++) s->buffer[56 + i] = (uint8_t)(bits >> (56 - 8 * i));
    sha256_compress(s->h, s->buffer);
    static const char HEX[] = "0123456789abcdef";
    for (int i = 0; i < 4; i++) {
        for (int j = 0; j < 4; j++) {
            uint8_t byte = (uint8_t)(s->h[i] >> (24 - 8 * j));
            out[8 * i + 2 * j] = HEX[byte >> 4];
            out[8 * i + 2 * j + 1] = HEX[byte & 15];
        }
    }
}

/* the decimal digits of x >= 0 at out (at most 19); returns how many (snprintf's "%zd", without its cost) */
static int put_decimal(char *out, Py_ssize_t x) {
    char digits[24];
    int n = 0;
    do {
        digits[n++] = (char)('0' + x % 10);
        x /= 10;
    } while (x > 0);
    for (int i = 0; i < n; i++) out[i] = digits[n - 1 - i];
    return n;
}

/* a per-chunk value: the i-th item of a list, or the one object shared by every chunk */
static PyObject *per_chunk(PyObject *value, Py_ssize_t i) {
    return PyList_CheckExact(value) ? PyList_GET_ITEM(value, i) : value;
}

static PyObject *chunk_keys[12];
static const char *CHUNK_KEY_NAMES[12] = {"text", "start", "end", "doc_id", "index", "id",
                                          "size", "unit", "headings", "metadata", "title", "embed_text"};
static PyObject *span_start_name, *span_end_name, *span_size_name, *ids_name;

static int intern_names(void) {
    if (chunk_keys[0] != NULL) return 0;
    for (int i = 0; i < 12; i++) {
        chunk_keys[i] = PyUnicode_InternFromString(CHUNK_KEY_NAMES[i]);
        if (chunk_keys[i] == NULL) return -1;
    }
    span_start_name = chunk_keys[1];
    span_end_name = chunk_keys[2];
    span_size_name = chunk_keys[6];
    ids_name = PyUnicode_InternFromString("_ids");
    return ids_name == NULL ? -1 : 0;
}

/* a span's `start`, `end` or `size` (index 0, 1, 2 of a `PackedSpan`, a named tuple: read off the tuple) */
static int span_field(PyObject *span, PyObject *name, Py_ssize_t index, Py_ssize_t *out, PyObject **keep) {
    PyObject *value = PyTuple_Check(span) && PyTuple_GET_SIZE(span) == 3 ? Py_NewRef(PyTuple_GET_ITEM(span, index))
                                                                         : PyObject_GetAttr(span, name);
    if (value == NULL) return -1;
    Py_ssize_t x = PyNumber_AsSsize_t(value, PyExc_OverflowError);
    if (x == -1 && PyErr_Occurred()) {
        Py_DECREF(value);
        return -1;
    }
    *out = x;
    *keep = value;
    return 0;
}

/* the id of [start, end) into hex: SHA-256 of the prefix state `base` and "start\x1fend" */
static void span_id(const sha256_state *base, Py_ssize_t start, Py_ssize_t end, char hex[32]) {
    char suffix[48]; /* "start\x1fend" */
    int suffix_length = put_decimal(suffix, start);
    suffix[suffix_length++] = 0x1f;
    suffix_length += put_decimal(suffix + suffix_length, end);
    sha256_state state = *base;
    sha256_update(&state, (const uint8_t *)suffix, (size_t)suffix_length);
    sha256_hex32(&state, hex);
}

/* `make_chunks(cls, text, spans, ids, unit, ...)`: each chunk keeps the document's `ChunkIds` as `_ids`, from
 * which its `id` and `doc_id` are worked out when first asked for (`IdField`). */
static PyObject *make_chunks(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *cls, *text, *spans, *ids, *unit, *title, *headings, *metadata, *embeds;
    if (!PyArg_ParseTuple(args, "OUO!OUUOOO", &cls, &text, &PyList_Type, &spans, &ids, &unit, &title, &headings,
                          &metadata, &embeds)) {
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(spans);
    if (!PyType_Check(cls) || intern_names() < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "make_chunks: cls must be a class");
        return NULL;
    }
    PyObject *lists[3] = {headings, metadata, embeds};
    for (int i = 0; i < 3; i++) {
        if (PyList_CheckExact(lists[i]) && PyList_GET_SIZE(lists[i]) != n) {
            PyErr_SetString(PyExc_ValueError, "make_chunks: a per-chunk list is not as long as the spans");
            return NULL;
        }
    }
    PyObject *empty = PyTuple_New(0);
    PyObject *out = PyList_New(n);
    if (empty == NULL || out == NULL) goto fail;
    Py_ssize_t text_length = PyUnicode_GET_LENGTH(text);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *span = PyList_GET_ITEM(spans, i);
        PyObject *start_obj, *end_obj, *size_obj;
        Py_ssize_t start, end, size;
        if (span_field(span, span_start_name, 0, &start, &start_obj) < 0) goto fail;
        if (span_field(span, span_end_name, 1, &end, &end_obj) < 0) {
            Py_DECREF(start_obj);
            goto fail;
        }
        if (span_field(span, span_size_name, 2, &size, &size_obj) < 0) {
            Py_DECREF(start_obj);
            Py_DECREF(end_obj);
            goto fail;
        }
        (void)size;
        PyObject *values[12] = {NULL}; /* by chunk_keys' index; `doc_id` (3) and `id` (5) wait in `_ids` */
        PyObject *chunk = NULL;
        if (start < 0 || end < start || end > text_length) {
            PyErr_SetString(PyExc_ValueError, "make_chunks: a span lies outside the text");
            goto chunk_fail;
        }
        values[0] = PyUnicode_Substring(text, start, end);
        values[4] = PyLong_FromSsize_t(i);
        if (values[0] == NULL || values[4] == NULL) goto chunk_fail;
        values[1] = start_obj;
        values[2] = end_obj;
        values[6] = size_obj;
        start_obj = end_obj = size_obj = NULL;
        values[7] = Py_NewRef(unit);
        values[8] = Py_NewRef(per_chunk(headings, i));
        values[9] = Py_NewRef(per_chunk(metadata, i));
        values[10] = Py_NewRef(title);
        PyObject *embed = per_chunk(embeds, i);
        values[11] = Py_NewRef(embed == Py_None ? values[0] : embed);
        chunk = PyBaseObject_Type.tp_new((PyTypeObject *)cls, empty, NULL);
        if (chunk == NULL) goto chunk_fail;
        /* object.__setattr__, as the frozen dataclass's own __init__ does: the values go into the instance's
         * inline slots (Python 3.11+), and no dict object is made until something asks for one (an id read) */
        for (int k = 0; k < 12; k++) {
            if (values[k] != NULL && PyObject_GenericSetAttr(chunk, chunk_keys[k], values[k]) < 0) goto chunk_fail;
        }
        if (PyObject_GenericSetAttr(chunk, ids_name, ids) < 0) goto chunk_fail;
        for (int k = 0; k < 12; k++) Py_XDECREF(values[k]);
        PyList_SET_ITEM(out, i, chunk);
        continue;
    chunk_fail:
        Py_XDECREF(start_obj);
        Py_XDECREF(end_obj);
        Py_XDECREF(size_obj);
        Py_XDECREF(chunk);
        for (int k = 0; k < 12; k++) Py_XDECREF(values[k]);
        goto fail;
    }
    Py_DECREF(empty);
    return out;
fail:
    Py_XDECREF(out);
    Py_XDECREF(empty);
    return NULL;
}

/* `char_packed(cls, spans, budget)`: kireme/pack.py `_Packer.run`'s end in characters without overlap: each
 * (start, end) of `spans` as `cls(start, end, end - start)` (`PackedSpan`, a named tuple, made as a tuple of
 * its class), or None when a span is longer than `budget` (Python re-packs it: `_Packer.enforce`) or is not a
 * pair of ints (Python makes those). */
static PyObject *char_packed(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *cls, *spans;
    Py_ssize_t budget;
    if (!PyArg_ParseTuple(args, "OO!n", &cls, &PyList_Type, &spans, &budget)) return NULL;
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "char_packed: cls must be a tuple class");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(spans);
    for (Py_ssize_t i = 0; i < n; i++) { /* every span checked first: nothing made when Python must go on */
        PyObject *span = PyList_GET_ITEM(spans, i);
        if (!PyTuple_Check(span) || PyTuple_GET_SIZE(span) != 2 || !PyLong_CheckExact(PyTuple_GET_ITEM(span, 0)) ||
            !PyLong_CheckExact(PyTuple_GET_ITEM(span, 1))) {
            Py_RETURN_NONE; /* not (int, int) pairs: Python's way, whatever they hold */
        }
        Py_ssize_t a = PyLong_AsSsize_t(PyTuple_GET_ITEM(span, 0));
        if (a == -1 && PyErr_Occurred()) return NULL;
        Py_ssize_t b = PyLong_AsSsize_t(PyTuple_GET_ITEM(span, 1));
        if (b == -1 && PyErr_Occurred()) return NULL;
        if (b - a > budget) Py_RETURN_NONE;
    }
    PyObject *out = PyList_New(n);
    if (out == NULL) return NULL;
    PyTypeObject *type = (PyTypeObject *)cls;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *span = PyList_GET_ITEM(spans, i);
        PyObject *a = PyTuple_GET_ITEM(span, 0), *b = PyTuple_GET_ITEM(span, 1);
        PyObject *size = PyLong_FromSsize_t(PyLong_AsSsize_t(b) - PyLong_AsSsize_t(a));
        PyObject *packed = size == NULL ? NULL : type->tp_alloc(type, 3);
        if (packed == NULL) {
            Py_XDECREF(size);
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(packed, 0, Py_NewRef(a));
        PyTuple_SET_ITEM(packed, 1, Py_NewRef(b));
        PyTuple_SET_ITEM(packed, 2, size);
        PyList_SET_ITEM(out, i, packed);
    }
    return out;
}

/* `IdField(name)`: `Chunk.id` and `Chunk.doc_id` (kireme/document.py `_FromIds`, its Python twin). A chunk a
 * chunker made holds its document's `ChunkIds` as `_ids` until one of the two is first read: then the id
 * (SHA-256 of the document's id prefix and "start\x1fend") and the document id are written into the chunk and
 * `_ids` is let go. The prefix is hashed once per document (`ChunkIds.prefix`, then its state kept as the
 * `ChunkIds`' `_sha`). Nothing points from the `ChunkIds` back to its chunks, so chunks whose ids are never
 * read are freed as soon as they are dropped, with no reference cycle for the collector. A non-data
 * descriptor: once the chunk's `__dict__` holds the value, it is read from there. */
typedef struct {
    PyObject_HEAD
    PyObject *name; /* "id" or "doc_id" */
} IdField;

static PyObject *sha_name, *prefix_name, *doc_id_attr_name;

static int intern_id_names(void) {
    if (doc_id_attr_name != NULL) return 0;
    if (intern_names() < 0) return -1;
    sha_name = PyUnicode_InternFromString("_sha");
    prefix_name = PyUnicode_InternFromString("prefix");
    doc_id_attr_name = PyUnicode_InternFromString("_doc_id");
    return sha_name && prefix_name && doc_id_attr_name ? 0 : -1;
}

/* the hashing state of `ids`' prefix (its `_sha`, bytes of a sha256_state), made from `ids.prefix` the first
 * time; a new reference, NULL on error */
static PyObject *prefix_state(PyObject *ids) {
    PyObject *sha = PyObject_GetAttr(ids, sha_name);
    if (sha == NULL) return NULL;
    if (sha == Py_None) {
        Py_DECREF(sha);
        PyObject *prefix = PyObject_GetAttr(ids, prefix_name); /* hashes the document the first time */
        if (prefix == NULL) return NULL;
        if (!PyBytes_Check(prefix)) {
            Py_DECREF(prefix);
            PyErr_SetString(PyExc_TypeError, "IdField: the ids' prefix must be bytes");
            return NULL;
        }
        sha256_state state;
        memset(&state, 0, sizeof(state));
        sha256_init(&state);
        sha256_update(&state, (const uint8_t *)PyBytes_AS_STRING(prefix), (size_t)PyBytes_GET_SIZE(prefix));
        Py_DECREF(prefix);
        sha = PyBytes_FromStringAndSize((const char *)&state, sizeof(state));
        if (sha == NULL || PyObject_SetAttr(ids, sha_name, sha) < 0) {
            Py_XDECREF(sha);
            return NULL;
        }
    }
    if (!PyBytes_Check(sha) || PyBytes_GET_SIZE(sha) != (Py_ssize_t)sizeof(sha256_state)) {
        Py_DECREF(sha);
        PyErr_SetString(PyExc_TypeError, "IdField: the ids' _sha is not a hashing state");
        return NULL;
    }
    return sha;
}

static PyObject *id_field_get(PyObject *self, PyObject *chunk, PyObject *type) {
    (void)type;
    if (chunk == NULL || chunk == Py_None) return Py_NewRef(self);
    PyObject *name = ((IdField *)self)->name;
    if (intern_id_names() < 0) return NULL;
    PyObject *dict = PyObject_GenericGetDict(chunk, NULL);
    if (dict == NULL) return NULL;
    PyObject *result = NULL, *ids = NULL, *sha = NULL, *doc_id = NULL, *id = NULL;
    ids = Py_XNewRef(PyDict_GetItemWithError(dict, ids_name));
    if (ids == NULL) {
        result = PyErr_Occurred() ? NULL : Py_XNewRef(PyDict_GetItemWithError(dict, name)); /* read already */
        if (result == NULL && !PyErr_Occurred()) {
            PyErr_Format(PyExc_AttributeError, "'%.100s' object has no attribute '%U'", Py_TYPE(chunk)->tp_name,
                         name);
        }
        goto done;
    }
    sha = prefix_state(ids);
    if (sha == NULL) goto done;
    PyObject *start_obj = PyDict_GetItemWithError(dict, span_start_name);
    PyObject *end_obj = PyDict_GetItemWithError(dict, span_end_name);
    Py_ssize_t start = start_obj ? PyNumber_AsSsize_t(start_obj, PyExc_OverflowError) : -1;
    Py_ssize_t end = end_obj ? PyNumber_AsSsize_t(end_obj, PyExc_OverflowError) : -1;
    if (start < 0 || end < start) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "IdField: a chunk must have 0 <= start <= end");
        goto done;
    }
    sha256_state base;
    memcpy(&base, PyBytes_AS_STRING(sha), sizeof(base));
    char hex[32];
    span_id(&base, start, end, hex);
    id = PyUnicode_FromStringAndSize(hex, 32);
    doc_id = PyObject_GetAttr(ids, doc_id_attr_name); /* set with the prefix */
    if (id == NULL || doc_id == NULL || PyDict_SetItem(dict, chunk_keys[5], id) < 0 ||
        PyDict_SetItem(dict, chunk_keys[3], doc_id) < 0) {
        goto done;
    }
    if (PyDict_DelItem(dict, ids_name) < 0) { /* another thread read this chunk's id while the prefix was made */
        if (!PyErr_ExceptionMatches(PyExc_KeyError)) goto done;
        PyErr_Clear();
    }
    result = Py_XNewRef(PyDict_GetItemWithError(dict, name));
    if (result == NULL && !PyErr_Occurred()) PyErr_SetObject(PyExc_AttributeError, name);
done:
    Py_XDECREF(id);
    Py_XDECREF(doc_id);
    Py_XDECREF(sha);
    Py_XDECREF(ids);
    Py_DECREF(dict);
    return result;
}

static int id_field_init(PyObject *self, PyObject *args, PyObject *kwargs) {
    PyObject *name;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) > 0) {
        PyErr_SetString(PyExc_TypeError, "IdField takes no keyword arguments");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "U", &name)) return -1;
    Py_XSETREF(((IdField *)self)->name, Py_NewRef(name));
    return 0;
}

static void id_field_dealloc(PyObject *self) {
    Py_XDECREF(((IdField *)self)->name);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *id_field_repr(PyObject *self) {
    return PyUnicode_FromFormat("IdField(%R)", ((IdField *)self)->name ? ((IdField *)self)->name : Py_None);
}

static PyTypeObject IdFieldType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kireme._speedups.IdField",
    .tp_basicsize = sizeof(IdField),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "IdField(name): a chunk's id or doc_id, worked out from its document's ChunkIds when first read",
    .tp_new = PyType_GenericNew,
    .tp_init = id_field_init,
    .tp_dealloc = id_field_dealloc,
    .tp_repr = id_field_repr,
    .tp_descr_get = id_field_get,
};

/* ---------------------------------------------------------------------------------------------------------
 * `pair_cuts(text, a, b, first, second)`: every p with a < p < b where text[p - 1] is in `first` and
 * text[p] in `second` (kireme/boundaries/levels.py `PairLevel`, whose twin is a regex such as
 * `\p{Hiragana}(?=[\p{Han}\p{Katakana}])` searched in [a, b)). Each class is a bitmap of the Basic
 * Multilingual Plane (bit c % 8 of byte c / 8); None when [a, b) holds a character beyond it (Python's regex
 * decides those).
 */
static inline int in_bitmap(Py_UCS4 c, const unsigned char *bits, Py_ssize_t nbytes) {
    Py_ssize_t byte = (Py_ssize_t)(c >> 3);
    return byte < nbytes && (bits[byte] >> (c & 7)) & 1;
}

/* pair_cuts' loop on the string's code unit type: p where text[p - 1] is in f and text[p] in s */
#define PAIR_SCAN(UNIT)                                                                    \
    do {                                                                                   \
        const UNIT *t = data;                                                              \
        int before = in_bitmap(t[a], f, nf);                                               \
        for (Py_ssize_t p = a + 1; p < b; p++) {                                           \
            Py_UCS4 c = t[p];                                                              \
            if (before && in_bitmap(c, s, ns) && append_index(out, p) < 0) {               \
                Py_CLEAR(out);                                                             \
                break;                                                                     \
            }                                                                              \
            before = in_bitmap(c, f, nf);                                                  \
        }                                                                                  \
    } while (0)

static PyObject *pair_cuts(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *text;
    Py_ssize_t a, b;
    Py_buffer first, second;
    if (!PyArg_ParseTuple(args, "Unny*y*", &text, &a, &b, &first, &second)) return NULL;
    PyObject *out = PyList_New(0);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (a < 0) a = 0;
    if (b > n) b = n;
    if (out != NULL && a + 1 < b) {
        int kind = PyUnicode_KIND(text);
        const void *data = PyUnicode_DATA(text);
        const unsigned char *f = first.buf, *s = second.buf;
        Py_ssize_t nf = first.len, ns = second.len;
        if (kind == PyUnicode_1BYTE_KIND) {
            PAIR_SCAN(Py_UCS1);
        } else if (kind == PyUnicode_2BYTE_KIND) {
            PAIR_SCAN(Py_UCS2);
        } else {
            const Py_UCS4 *t = data;
            for (Py_ssize_t p = a; p < b; p++) { /* beyond the BMP: the regex decides (None) */
                if (t[p] > 0xFFFF) {
                    Py_CLEAR(out);
                    out = Py_NewRef(Py_None);
                    break;
                }
            }
            if (out != Py_None) PAIR_SCAN(Py_UCS4);
        }
    }
    PyBuffer_Release(&first);
    PyBuffer_Release(&second);
    return out;
}

/* the arguments (text, a, b) of a level's scan, a clamped to 0 and b to the text's length, with the list
   of cuts to fill */
typedef struct {
    Py_ssize_t a, b, n; /* n: the text's length */
    int kind;
    const void *data;
    PyObject *out;
} LevelScan;

/* the scan of `text` with a and b (parsed into `scan` already) clamped to it */
static int level_scan_of(PyObject *text, LevelScan *scan) {
    scan->n = PyUnicode_GET_LENGTH(text);
    if (scan->a < 0) scan->a = 0;
    if (scan->b > scan->n) scan->b = scan->n;
    scan->kind = PyUnicode_KIND(text);
    scan->data = PyUnicode_DATA(text);
    scan->out = PyList_New(0);
    return scan->out == NULL ? -1 : 0;
}

static int level_scan(PyObject *args, LevelScan *scan) {
    PyObject *text;
    if (!PyArg_ParseTuple(args, "Unn", &text, &scan->a, &scan->b)) return -1;
    return level_scan_of(text, scan);
}

/* ---------------------------------------------------------------------------------------------------------
 * `line_cuts(text, a, b)`: the starts of the matches of `\r?\n` searched in [a, b) that lie strictly inside
 * (a, b) (kireme/boundaries/levels.py `LineLevel`; its twin is that regex). A `\r` starts a match only with
 * its `\n` before b; a `\n` whose `\r` was taken with it is not a match of its own.
 */
static PyObject *line_cuts(PyObject *self, PyObject *args) {
    (void)self;
    LevelScan w;
    if (level_scan(args, &w) < 0) return NULL;
    for (Py_ssize_t p = next_newline(w.kind, w.data, w.a, w.b); p < w.b;
         p = next_newline(w.kind, w.data, p + 1, w.b)) {
        /* a "\r" before the "\n" starts the match when it lies in [a, b) */
        Py_ssize_t start = p > w.a && PyUnicode_READ(w.kind, w.data, p - 1) == '\r' ? p - 1 : p;
        if (start > w.a && append_index(w.out, start) < 0) {
            Py_DECREF(w.out);
            return NULL;
        }
    }
    return w.out;
}

/*
 * `sentence_line_breaks(text, breaks, starts, marks, closers)`: kireme/boundaries/levels.py
 * `SentenceLineLevel`'s filter: the line breaks of `breaks` after which, past whitespace (`str.isspace`, as
 * the `\s*` of `_next_ink`), a sentence of `starts` (sorted) begins, or before which the line ends with one of
 * `marks` (closing marks of `closers`, spaces, tabs, ideographic spaces and "\r" after it aside:
 * `_ends_sentence_mark`).
 */
static int in_sorted(const Py_ssize_t *values, Py_ssize_t n, Py_ssize_t x) {
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (values[mid] < x) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && values[lo] == x;
}

static PyObject *sentence_line_breaks(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *text, *breaks, *starts_l, *marks, *closers;
    if (!PyArg_ParseTuple(args, "UO!O!UU", &text, &PyList_Type, &breaks, &PyList_Type, &starts_l, &marks,
                          &closers)) {
        return NULL;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), count = PyList_GET_SIZE(starts_l);
    Py_ssize_t marks_n = PyUnicode_GET_LENGTH(marks), closers_n = PyUnicode_GET_LENGTH(closers);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t *starts = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(count + 1));
    if (starts == NULL) return PyErr_NoMemory();
    PyObject *out = NULL;
    if (ssize_array(starts_l, count, starts) < 0) goto done;
    out = PyList_New(0);
    if (out == NULL) goto done;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(breaks); i++) {
        PyObject *item = PyList_GET_ITEM(breaks, i);
        Py_ssize_t brk = PyNumber_AsSsize_t(item, PyExc_OverflowError);
        if (brk == -1 && PyErr_Occurred()) goto fail;
        if (brk < 0 || brk > n) {
            PyErr_SetString(PyExc_ValueError, "sentence_line_breaks: a break outside the text");
            goto fail;
        }
        Py_ssize_t ink = brk;
        while (ink < n && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, ink))) ink++;
        int keep = in_sorted(starts, count, ink);
        if (!keep) {
            Py_ssize_t k = brk;
            while (k > 0) {
                Py_UCS4 c = PyUnicode_READ(kind, data, k - 1);
                if (c != ' ' && c != '\t' && c != 0x3000 && c != '\r') break;
                k--;
            }
            while (k > 0 && PyUnicode_FindChar(closers, PyUnicode_READ(kind, data, k - 1), 0, closers_n, 1) >= 0) k--;
            keep = k > 0 && PyUnicode_FindChar(marks, PyUnicode_READ(kind, data, k - 1), 0, marks_n, 1) >= 0;
        }
        if (keep && PyList_Append(out, item) < 0) goto fail;
    }
    goto done;
fail:
    Py_CLEAR(out);
done:
    PyMem_Free(starts);
    return out;
}

/*
 * `clause_cuts(text, a, b)`: kireme/boundaries/levels.py `CLAUSE` (its regex
 * `[、;；]|[，,：](?![0-9０-９])|:(?![0-9０-９/\\])`, cut after each match): after each "、", ";" or "；", and
 * after each "，", ",", ":" or "：" not followed by a digit (nor an ASCII ":" by "/" or a backslash: a URL, a
 * path) inside [a, b) — strictly inside (a, b). `word_cuts(text, a, b)`: `WORD` (`[ \t\u3000]+`, cut at
 * each match's start): where a run of spaces, tabs and ideographic spaces begins, strictly inside (a, b).
 * Both without a regex match object per cut (the word level meets every space of English and code).
 * `clause_cuts(text, a, b, True)` leaves out the cut after the colon that ends a speaker's name in a dialogue
 * (`ClauseLevel.cuts`, kireme/text/headings.py `after_speaker_label`), judged in C where Python judged each colon.
 */
static int clause_mark(Py_UCS4 c) { return c == 0x3001 || c == ';' || c == 0xFF1B; }
static int clause_separator(Py_UCS4 c) { return c == 0xFF0C || c == ',' || c == ':' || c == 0xFF1A; }
static int any_digit(Py_UCS4 c) { return (c >= '0' && c <= '9') || (c >= 0xFF10 && c <= 0xFF19); }
static int word_space(Py_UCS4 c) { return c == ' ' || c == '\t' || c == 0x3000; }

/* `_YEAR` after the comma at p (within b) and a day of one or two ASCII digits before it: "Apr. 1, 2025" */
static int date_comma(int kind, const void *data, Py_ssize_t p, Py_ssize_t b) {
    if (p + 5 >= b) return 0; /* " 2025" must lie before b, as the regex's lookahead does */
    Py_UCS4 space = PyUnicode_READ(kind, data, p + 1), first = PyUnicode_READ(kind, data, p + 2);
    if ((space != ' ' && space != '\t') || (first != '1' && first != '2')) return 0;
    for (Py_ssize_t q = p + 3; q <= p + 5; q++) {
        Py_UCS4 d = PyUnicode_READ(kind, data, q);
        if (d < '0' || d > '9') return 0;
    }
    if (p + 6 < b) {
        Py_UCS4 after = PyUnicode_READ(kind, data, p + 6);
        if (after >= '0' && after <= '9') return 0;
    }
    Py_ssize_t digits = 0;
    while (p - digits > 0 && digits < 3) {
        Py_UCS4 d = PyUnicode_READ(kind, data, p - digits - 1);
        if (d < '0' || d > '9') break;
        digits++;
    }
    return digits == 1 || digits == 2;
}

/* kireme/text/headings.py `after_speaker_label` for the cut after the colon at p: the colon ends a speaker's name
 * at the start of its line (`speaker_name`) and that line is a turn in a dialogue (`in_dialogue`) */
static int speaker_label_colon(int kind, const void *data, Py_ssize_t n, Py_ssize_t p) {
    Py_ssize_t start = prev_newline(kind, data, 0, p) + 1;
    while (start < p && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, start))) start++;
    Py_ssize_t end = next_newline(kind, data, p + 1, n), ns, ne;
    return stripped_speaker(kind, data, start, end, &ns, &ne) && ne == p && in_dialogue(kind, data, n, start, end);
}

static PyObject *clause_cuts(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *text;
    int labels = 0;
    LevelScan w;
    if (!PyArg_ParseTuple(args, "Unn|p", &text, &w.a, &w.b, &labels) || level_scan_of(text, &w) < 0) return NULL;
    for (Py_ssize_t p = w.a; p + 1 < w.b; p++) { /* a cut after the last character would not lie inside */
        Py_UCS4 c = PyUnicode_READ(w.kind, w.data, p);
        if (c < ',' || (c > ';' && c < 0x3001)) continue; /* the usual character: none of the marks */
        Py_UCS4 next = PyUnicode_READ(w.kind, w.data, p + 1);
        if (clause_mark(c) || (clause_separator(c) && !any_digit(next) && !(c == ':' && (next == '/' || next == '\\')) &&
                               !(c == ',' && date_comma(w.kind, w.data, p, w.b)))) {
            if (labels && (c == ':' || c == 0xFF1A) && speaker_label_colon(w.kind, w.data, w.n, p)) continue;
            if (append_index(w.out, p + 1) < 0) {
                Py_DECREF(w.out);
                return NULL;
            }
        }
    }
    return w.out;
}

/* `quoted_ends(text, a, b)`: kireme/boundaries/levels.py `QuotedSentenceLevel` (its regex
 * `[。！？｡]+(?![closers and terminators])[ \t\u3000]*`, searched in [a, b), the end of each match strictly inside
 * (a, b)): a run of "。！？｡" not followed by a closer or a terminator (a shorter run would be followed by one of
 * them: every match is a whole run), and the spaces after it. */
static int quoted_terminator(Py_UCS4 c) { return c == 0x3002 || c == 0xFF01 || c == 0xFF1F || c == 0xFF61; }

static PyObject *quoted_ends(PyObject *self, PyObject *args) {
    (void)self;
    LevelScan w;
    if (level_scan(args, &w) < 0) return NULL;
    Py_ssize_t p = w.a;
    while (p < w.b) {
        if (!quoted_terminator(PyUnicode_READ(w.kind, w.data, p))) {
            p++;
            continue;
        }
        while (p < w.b && quoted_terminator(PyUnicode_READ(w.kind, w.data, p))) p++;
        if (p < w.b) {
            Py_UCS4 next = PyUnicode_READ(w.kind, w.data, p);
            if (is_closer(next) || is_terminator(next)) continue;
        }
        while (p < w.b && word_space(PyUnicode_READ(w.kind, w.data, p))) p++;
        if (p < w.b && p > w.a && append_index(w.out, p) < 0) {
            Py_DECREF(w.out);
            return NULL;
        }
    }
    return w.out;
}

static PyObject *word_cuts(PyObject *self, PyObject *args) {
    (void)self;
    LevelScan w;
    if (level_scan(args, &w) < 0) return NULL;
    int before = w.a < w.b && word_space(PyUnicode_READ(w.kind, w.data, w.a));
    for (Py_ssize_t p = w.a + 1; p < w.b; p++) {
        int space = word_space(PyUnicode_READ(w.kind, w.data, p));
        if (space && !before && append_index(w.out, p) < 0) {
            Py_DECREF(w.out);
            return NULL;
        }
        before = space;
    }
    return w.out;
}

/*
 * `kept_brackets(text, limit, fits=None)`: kireme/boundaries/levels.py `KeptBrackets.spans` (its reference:
 * `bracket_pairs` over the whole text, each pair as (opening, after closing), sorted by opening with the
 * longer of two first, kept while it opens at or after the last kept one's end and is at most `limit`
 * characters long, or, where `fits` is given (another measure: tokens), while `fits(start, end)` is true:
 * it is asked of the pairs the reference asks it of, in the same order, but those at most `limit`
 * characters long, which the caller knows fit; -1 asks it of all). The pairs: an opener pushed (the oldest
 * dropped from a full stack of `_MAX_DEPTH`), a closer paired with the nearest open bracket of its kind, the
 * brackets opened after that one dropped.
 * Returns (starts, ends).
 */
#define BRACKET_MAX_DEPTH 32

typedef struct {
    Py_ssize_t start, end;
} BracketPair;

static int bracket_order(const void *x, const void *y) {
    const BracketPair *p = x, *q = y;
    if (p->start != q->start) return p->start < q->start ? -1 : 1;
    if (p->end != q->end) return p->end > q->end ? -1 : 1;
    return 0;
}

static PyObject *kept_brackets(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *text, *fits = Py_None;
    Py_ssize_t limit;
    if (!PyArg_ParseTuple(args, "Un|O", &text, &limit, &fits)) return NULL;
    if (fits != Py_None && !PyCallable_Check(fits)) {
        PyErr_SetString(PyExc_TypeError, "kept_brackets: fits must be callable or None");
        return NULL;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t open_at[BRACKET_MAX_DEPTH];
    Py_UCS4 closes[BRACKET_MAX_DEPTH];
    int depth = 0;
    Py_ssize_t count = 0, room = 0;
    BracketPair *pairs = NULL;
    PyObject *starts = NULL, *ends = NULL;
    /* the next bracket at or after p (n: none), by the text's kind: one table read per character */
#define NEXT_BRACKET(T)                                                                      \
    do {                                                                                     \
        const T *t = data;                                                                   \
        while (p < n && (t[p] >= 0x10000 || !(MARK_CLASS[t[p]] & (MARK_OPENER | MARK_BRACKET_CLOSER)))) \
            p++;                                                                             \
    } while (0)
    for (Py_ssize_t p = 0; p < n; p++) {
        if (kind == PyUnicode_1BYTE_KIND) {
            NEXT_BRACKET(Py_UCS1);
        } else if (kind == PyUnicode_2BYTE_KIND) {
            NEXT_BRACKET(Py_UCS2);
        } else {
            NEXT_BRACKET(Py_UCS4);
        }
        if (p >= n) break;
        Py_UCS4 c = PyUnicode_READ(kind, data, p);
        int opener = opener_index(c);
        if (opener >= 0) {
            if (depth == BRACKET_MAX_DEPTH) {
                memmove(open_at, open_at + 1, sizeof(open_at[0]) * (BRACKET_MAX_DEPTH - 1));
                memmove(closes, closes + 1, sizeof(closes[0]) * (BRACKET_MAX_DEPTH - 1));
                depth--;
            }
            open_at[depth] = p;
            closes[depth] = OPENER_CLOSES[opener];
            depth++;
            continue;
        }
        for (int d = depth - 1; d >= 0; d--) {
            if (closes[d] != c) continue;
            if (count == room) {
                Py_ssize_t grown = room ? room * 2 : 64;
                BracketPair *more = PyMem_Realloc(pairs, sizeof(BracketPair) * (size_t)grown);
                if (more == NULL) {
                    PyErr_NoMemory();
                    goto error;
                }
                pairs = more;
                room = grown;
            }
            pairs[count].start = open_at[d];
            pairs[count].end = p + 1;
            count++;
            depth = d;
            break;
        }
    }
#undef NEXT_BRACKET
    if (count > 1) qsort(pairs, (size_t)count, sizeof(BracketPair), bracket_order);
    starts = PyList_New(0);
    ends = PyList_New(0);
    if (starts == NULL || ends == NULL) goto error;
    Py_ssize_t last_end = -1;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (pairs[i].start < last_end) continue;
        if (fits == Py_None) {
            if (pairs[i].end - pairs[i].start > limit) continue;
        } else if (pairs[i].end - pairs[i].start > limit) { /* at most limit characters: fits, unasked */
            PyObject *answer = PyObject_CallFunction(fits, "nn", pairs[i].start, pairs[i].end);
            if (answer == NULL) goto error;
            int kept = PyObject_IsTrue(answer);
            Py_DECREF(answer);
            if (kept < 0) goto error;
            if (!kept) continue;
        }
        if (append_index(starts, pairs[i].start) < 0 || append_index(ends, pairs[i].end) < 0) goto error;
        last_end = pairs[i].end;
    }
    PyMem_Free(pairs);
    return Py_BuildValue("(NN)", starts, ends);
error:
    PyMem_Free(pairs);
    Py_XDECREF(starts);
    Py_XDECREF(ends);
    return NULL;
}

/*
 * `token_offsets(ids, counts, firsts)`: kireme/length.py `_TokenSizer`'s tables for one encoded text in one
 * pass (its numpy steps, `_token_tables_numpy`, are the reference): for each token id (4-byte unsigned ints,
 * as tiktoken's buffer holds them) the character its first byte belongs to — the characters begun in the
 * bytes of the tokens before it (`counts`, one signed byte per id), less one when its first byte continues a
 * character (`firsts`, one byte per id: 1 when it starts one) — as native 4-byte ints, and that `firsts` byte.
 * Returns (starts, flags) as bytes; ValueError for an id the tables do not hold.
 */
static PyObject *token_offsets(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer ids, counts, firsts;
    if (!PyArg_ParseTuple(args, "y*y*y*", &ids, &counts, &firsts)) return NULL;
    PyObject *starts = NULL, *flags = NULL, *result = NULL;
    if (ids.len % 4 != 0 || counts.len != firsts.len) {
        PyErr_SetString(PyExc_ValueError, "token_offsets: ids must be 4-byte ints and the tables equally long");
        goto done;
    }
    Py_ssize_t n = ids.len / 4, vocab = counts.len;
    starts = PyBytes_FromStringAndSize(NULL, n * 4);
    flags = PyBytes_FromStringAndSize(NULL, n);
    if (starts == NULL || flags == NULL) goto done;
    const unsigned char *id_bytes = ids.buf;
    const signed char *count = counts.buf;
    const signed char *first = firsts.buf;
    char *start_bytes = PyBytes_AS_STRING(starts);
    char *flag_bytes = PyBytes_AS_STRING(flags);
    long long begun = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint32_t t;
        memcpy(&t, id_bytes + 4 * i, 4);
        if ((Py_ssize_t)t >= vocab) {
            PyErr_Format(PyExc_ValueError, "token_offsets: token id %lu is not in the tables", (unsigned long)t);
            goto done;
        }
        int32_t at = (int32_t)(begun + first[t] - 1);
        memcpy(start_bytes + 4 * i, &at, 4);
        flag_bytes[i] = (char)first[t];
        begun += count[t];
    }
    result = PyTuple_Pack(2, starts, flags);
done:
    Py_XDECREF(starts);
    Py_XDECREF(flags);
    PyBuffer_Release(&ids);
    PyBuffer_Release(&counts);
    PyBuffer_Release(&firsts);
    return result;
}

/*
 * `line_starts(text)`: 0 and the offset after every "\n" (kireme/text/markdown.py `_line_starts_python`: the
 * start of every line; "\r\n" ends one line), without a regex match object per line.
 */
static PyObject *line_starts(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *text;
    if (!PyArg_ParseTuple(args, "U", &text)) return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    if (append_index(out, 0) < 0) goto fail;
    for (Py_ssize_t p = next_newline(kind, data, 0, n); p < n; p = next_newline(kind, data, p + 1, n)) {
        if (append_index(out, p + 1) < 0) goto fail;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/*
 * `plain_paragraph_starts(text)`: kireme/text/markdown.py `_plain_paragraph_starts_python`, in one pass over the
 * lines: None when some line could begin another block than a paragraph (`_BLOCK_SYNTAX_LINE`: indented
 * content, one of #>*+-_=`~<[|: first, a number and "." or ")") or the text has a "\r" without its "\n";
 * else where each paragraph starts: every line with content that is the first or comes after a blank line
 * (spaces and tabs only, which is what markdown-it calls blank). Without a regex pass per question: each of
 * the two searched the text at about 1 ns a character, a third of `markdown` on a plain article.
 */
static PyObject *plain_paragraph_starts(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *text;
    if (!PyArg_ParseTuple(args, "U", &text)) return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    for (Py_ssize_t r = PyUnicode_FindChar(text, '\r', 0, n, 1); r >= 0; r = PyUnicode_FindChar(text, '\r', r + 1, n, 1)) {
        if (r == -2) return NULL;
        if (r + 1 >= n || PyUnicode_READ(kind, data, r + 1) != '\n') Py_RETURN_NONE; /* a lone "\r" */
    }
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    int after_blank = 1; /* the first line counts as after a blank one */
    for (Py_ssize_t start = 0; start < n;) {
        Py_ssize_t end = next_newline(kind, data, start, n), p = start;
        Py_UCS4 c = PyUnicode_READ(kind, data, p);
        while (p < end && (c == ' ' || c == '\t')) c = ++p < end ? PyUnicode_READ(kind, data, p) : 0;
        int blank = p >= end || (c == '\r' && p + 1 == end);
        if (!blank) {
            if (p > start) goto plain_none; /* indented content */
            if (c != 0 && c < 0x80 && strchr("#>*+-_=`~<[|:", (int)c) != NULL) goto plain_none;
            if (c >= '0' && c <= '9') {
                Py_ssize_t q = p;
                while (q < end && PyUnicode_READ(kind, data, q) >= '0' && PyUnicode_READ(kind, data, q) <= '9') q++;
                if (q < end && (PyUnicode_READ(kind, data, q) == '.' || PyUnicode_READ(kind, data, q) == ')'))
                    goto plain_none; /* an ordered list marker */
            }
            if (after_blank && append_index(out, start) < 0) {
                Py_DECREF(out);
                return NULL;
            }
        }
        after_blank = blank;
        start = end + 1;
    }
    return out;
plain_none:
    Py_DECREF(out);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------------------------------------------
 * `scan_blocks(text, pos)`: kireme/text/markdown.py `_scanned_outline`'s loop over the simple blocks, from `pos`
 * (a line start) on: the blank lines skipped (`_BLANKS`), then each block `_scanned_block` reads, read the same
 * way here — a paragraph whose first line can be nothing else (`_NOT_PARAGRAPH_FIRST`) and whose later lines
 * neither end it nor turn it into something else (`_paragraph_stop`), up to a blank line; an HTML comment in
 * column 0; an ATX heading; a fence that a later line closes — until a block it leaves to Python: one that may
 * open a table, a list, quote or other block the parser reads, a fence never closed, HTML other than a comment,
 * a paragraph ended otherwise than by a blank line or by a line that may open HTML, a paragraph that may hold
 * a link reference definition. Returns (starts, headings, fences, pos, done): the block starts, in order; per
 * heading four ints (start, marks end, content end, title end: `_scanned_heading`'s); per closed fence six
 * (start, closing line start, its end, marker run length, info start, info end: `_scanned_fence`'s); `pos`
 * where the block Python reads starts; `done` when only blank lines are left.
 * -------------------------------------------------------------------------------------------------------- */

#define MD_END ((Py_UCS4)0x110000) /* past the text: no character */
#define MD_AT(i) ((i) < n ? PyUnicode_READ(kind, data, (i)) : MD_END)

/* past `[ \t]*` from i */
static Py_ssize_t md_spaces(int kind, const void *data, Py_ssize_t n, Py_ssize_t i) {
    while (i < n && (PyUnicode_READ(kind, data, i) == ' ' || PyUnicode_READ(kind, data, i) == '\t')) i++;
    return i;
}

/* past `[ \t]*\r?` from i: where a blank line's line feed is, or the end */
static Py_ssize_t md_blank_end(int kind, const void *data, Py_ssize_t n, Py_ssize_t i) {
    i = md_spaces(kind, data, n, i);
    return i < n && PyUnicode_READ(kind, data, i) == '\r' ? i + 1 : i;
}

/* past ` {0,3}` from i: the indentation a block may have and still be one */
static Py_ssize_t md_indent(int kind, const void *data, Py_ssize_t n, Py_ssize_t i) {
    Py_ssize_t k = i;
    while (k < i + 3 && k < n && PyUnicode_READ(kind, data, k) == ' ') k++;
    return k;
}

/* whether the line from `i` is blank up to its line feed or the end: `[ \t]*\r?$` (`$` before "\n" or at the end) */
static int md_blank_rest(int kind, const void *data, Py_ssize_t n, Py_ssize_t i) {
    i = md_blank_end(kind, data, n, i);
    return i >= n || PyUnicode_READ(kind, data, i) == '\n';
}

/* whether the line from `i` holds only characters of `set` and ends as `\r?$` does: `[set]*\r?$` */
static int md_only_rest(int kind, const void *data, Py_ssize_t n, Py_ssize_t i, const char *set) {
    for (; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c >= 0x80 || c == 0 || strchr(set, (int)c) == NULL) break;
    }
    if (i < n && PyUnicode_READ(kind, data, i) == '\r') i++;
    return i >= n || PyUnicode_READ(kind, data, i) == '\n';
}

/* `(?=[ \t\r\n]|\Z)` at i */
static int md_line_end_ahead(int kind, const void *data, Py_ssize_t n, Py_ssize_t i) {
    if (i >= n) return 1;
    Py_UCS4 c = PyUnicode_READ(kind, data, i);
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* the length of the run of `c` from i */
static Py_ssize_t md_run(int kind, const void *data, Py_ssize_t n, Py_ssize_t i, Py_UCS4 c) {
    Py_ssize_t j = i;
    while (j < n && PyUnicode_READ(kind, data, j) == c) j++;
    return j - i;
}

/* what a line may start with, at i, that is not a paragraph's text — the alternatives `_NOT_PARAGRAPH_FIRST`
 * and `_paragraph_stop` share: an ATX heading, a fence, a bullet, an ordered marker, a thematic break or setext
 * underline (`[-*_=][-*_= \t]*\r?$`) */
static int md_block_marker(int kind, const void *data, Py_ssize_t n, Py_ssize_t i) {
    Py_UCS4 c = MD_AT(i);
    if (c == '#') {
        Py_ssize_t r = md_run(kind, data, n, i, '#');
        if (r <= 6 && md_line_end_ahead(kind, data, n, i + r)) return 1;
    }
    if ((c == '`' || c == '~') && md_run(kind, data, n, i, c) >= 3) return 1;
    if ((c == '-' || c == '+' || c == '*') && md_line_end_ahead(kind, data, n, i + 1)) return 1;
    if (c >= '0' && c <= '9') {
        Py_ssize_t j = i;
        while (j < n && PyUnicode_READ(kind, data, j) >= '0' && PyUnicode_READ(kind, data, j) <= '9') j++;
        if (j < n && (PyUnicode_READ(kind, data, j) == '.' || PyUnicode_READ(kind, data, j) == ')') &&
            md_line_end_ahead(kind, data, n, j + 1))
            return 1;
    }
    if ((c == '-' || c == '*' || c == '_' || c == '=') && md_only_rest(kind, data, n, i + 1, "-*_= \t")) return 1;
    return 0;
}

/* `_may_open_table`: the line at i holds a "|" and the next one may be a delimiter row (`_DELIMITER_ROW`:
 * `[ \t]*[|\-:][|\-: \t]*\r?(?:\n|\Z)`) */
static int md_may_open_table(int kind, const void *data, Py_ssize_t n, Py_ssize_t i, Py_ssize_t line_end) {
    if (line_end >= n) return 0;
    Py_ssize_t j = i;
    while (j < line_end && PyUnicode_READ(kind, data, j) != '|') j++;
    if (j >= line_end) return 0;
    j = md_spaces(kind, data, n, line_end + 1);
    Py_UCS4 c = MD_AT(j);
    if (c != '|' && c != '-' && c != ':') return 0;
    return md_only_rest(kind, data, n, j + 1, "|-: \t");
}

static PyObject *scan_blocks(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *text;
    Py_ssize_t pos;
    if (!PyArg_ParseTuple(args, "Un", &text, &pos)) return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    PyObject *starts = PyList_New(0), *headings = PyList_New(0), *fences = PyList_New(0);
    int done = 0;
    if (starts == NULL || headings == NULL || fences == NULL) goto fail;
    if (pos < 0) pos = 0;
    for (;;) {
        /* `_BLANKS`: whole blank lines */
        Py_ssize_t q = md_blank_end(kind, data, n, pos);
        while (q < n && PyUnicode_READ(kind, data, q) == '\n') {
            pos = q + 1;
            q = md_blank_end(kind, data, n, pos);
        }
        if (q >= n) { /* nothing left, or only `_ONLY_BLANK`: `[ \t]*\r?\Z` */
            done = 1;
            break;
        }
        Py_UCS4 c = PyUnicode_READ(kind, data, pos);
        Py_ssize_t line_end = next_newline(kind, data, pos, n);
        if ((c == '#' || c == '`' || c == '~' || c == '<') && md_may_open_table(kind, data, n, pos, line_end)) break;
        if (c == '#') {
            Py_ssize_t marks = md_run(kind, data, n, pos, '#');
            if (marks <= 6 && md_line_end_ahead(kind, data, n, pos + marks)) { /* `_scanned_heading` */
                Py_ssize_t marks_end = pos + marks;
                Py_ssize_t title_end =
                    line_end > pos && PyUnicode_READ(kind, data, line_end - 1) == '\r' ? line_end - 1 : line_end;
                Py_ssize_t end = title_end;
                while (end > marks_end &&
                       (PyUnicode_READ(kind, data, end - 1) == ' ' || PyUnicode_READ(kind, data, end - 1) == '\t'))
                    end--;
                Py_ssize_t closing = end;
                while (closing > marks_end && PyUnicode_READ(kind, data, closing - 1) == '#') closing--;
                if (closing > marks_end && (PyUnicode_READ(kind, data, closing - 1) == ' ' ||
                                            PyUnicode_READ(kind, data, closing - 1) == '\t'))
                    end = closing;
                if (append_index(starts, pos) < 0 || append_index(headings, pos) < 0 ||
                    append_index(headings, marks_end) < 0 || append_index(headings, end) < 0 ||
                    append_index(headings, title_end) < 0)
                    goto fail;
                pos = line_end + 1 < n ? line_end + 1 : n;
                continue;
            }
        }
        if (c == '`' || c == '~') {
            Py_ssize_t marks = md_run(kind, data, n, pos, c);
            if (marks >= 3) { /* `_fence_opened`, then `_scanned_fence` for a fence a later line closes */
                Py_ssize_t info_start = pos + marks, info_end = info_start;
                int backtick_in_info = 0;
                while (info_end < n) {
                    Py_UCS4 d = PyUnicode_READ(kind, data, info_end);
                    if (d == '\r' || d == '\n') break;
                    if (d == '`') backtick_in_info = 1;
                    info_end++;
                }
                if (c == '`' && backtick_in_info) break; /* no fence: a run of three, which the parser reads */
                Py_ssize_t close_start = -1, close_end = -1;
                for (Py_ssize_t nl = line_end; nl < n;) { /* each later line: `_FENCE_CLOSE` */
                    Py_ssize_t ls = nl + 1, k = md_indent(kind, data, n, ls), next = next_newline(kind, data, ls, n);
                    Py_UCS4 d = MD_AT(k);
                    if (d == '`' || d == '~') {
                        Py_ssize_t run = md_run(kind, data, n, k, d);
                        if (run >= 3 && md_blank_rest(kind, data, n, k + run) && d == c && run >= marks) {
                            close_start = ls;
                            close_end = next < n ? next + 1 : n;
                            break;
                        }
                    }
                    nl = next;
                }
                if (close_start < 0) break; /* never closed: Python reads it */
                if (append_index(starts, pos) < 0 || append_index(fences, pos) < 0 ||
                    append_index(fences, close_start) < 0 || append_index(fences, close_end) < 0 ||
                    append_index(fences, marks) < 0 || append_index(fences, info_start) < 0 ||
                    append_index(fences, info_end) < 0)
                    goto fail;
                pos = close_end;
                continue;
            }
        }
        if (c == '<') {
            if (pos + 4 <= n && PyUnicode_READ(kind, data, pos + 1) == '!' && PyUnicode_READ(kind, data, pos + 2) == '-' &&
                PyUnicode_READ(kind, data, pos + 3) == '-') { /* `_scanned_comment` */
                if (append_index(starts, pos) < 0) goto fail;
                Py_ssize_t close = -1;
                for (Py_ssize_t j = pos; j + 3 <= n; j++) {
                    if (PyUnicode_READ(kind, data, j) == '-' && PyUnicode_READ(kind, data, j + 1) == '-' &&
                        PyUnicode_READ(kind, data, j + 2) == '>') {
                        close = j;
                        break;
                    }
                }
                if (close < 0) {
                    pos = n;
                } else {
                    Py_ssize_t next = next_newline(kind, data, close, n);
                    pos = next < n ? next + 1 : n;
                }
                continue;
            }
            break; /* other HTML: `_html_type` in Python */
        }
        if (c != '[' && (c == ' ' || c == '\t' || c == '>' || c == '|' || md_block_marker(kind, data, n, pos)))
            break; /* `_NOT_PARAGRAPH_FIRST`: the parser reads it */
        /* a paragraph: up to the first later line that is blank (`_paragraph_stop`'s group 1) */
        Py_ssize_t end = n;
        int other_stop = 0;
        for (Py_ssize_t nl = line_end; nl < n;) {
            Py_ssize_t ls = nl + 1;
            if (md_blank_rest(kind, data, n, ls)) {
                end = ls;
                break;
            }
            Py_ssize_t k = md_indent(kind, data, n, ls);
            Py_UCS4 d = MD_AT(k);
            if (d == '>' || d == '|' || d == '<' || md_block_marker(kind, data, n, k) ||
                ((d == '-' || d == ':') && md_only_rest(kind, data, n, k + 1, "|-: \t"))) {
                other_stop = 1; /* a line that may end it or make it something else ("<": `_html_type`) */
                break;
            }
            nl = next_newline(kind, data, ls, n);
        }
        if (other_stop) break;
        if (c == '[') { /* maybe a link reference definition */
            int definition = 0;
            for (Py_ssize_t j = pos; j + 2 <= end; j++) {
                if (PyUnicode_READ(kind, data, j) == ']' && PyUnicode_READ(kind, data, j + 1) == ':') {
                    definition = 1;
                    break;
                }
            }
            if (definition) break;
        }
        if (append_index(starts, pos) < 0) goto fail;
        pos = end;
    }
    {
        PyObject *result = Py_BuildValue("(NNNnO)", starts, headings, fences, pos, done ? Py_True : Py_False);
        return result;
    }
fail:
    Py_XDECREF(starts);
    Py_XDECREF(headings);
    Py_XDECREF(fences);
    return NULL;
}

/*
 * `line_marks(text, lo, hi, closers)`: the lines whose line feed lies in [lo, hi), found in one pass over the
 * line feeds. With `closers`: each match of kireme/text/markdown.py `_CLOSER_LINE` (a line holding only a
 * closing tag, a run of colons or `-->`, between blanks; searched with `finditer(text, lo, hi)`) as its start
 * and end, flat; without: the start of each line that `_OPENER_HINT` finds (blanks, then `<` and a letter,
 * `:::` or `<!--`, within hi). Each regex tried at every line feed was most of `_with_wrappers`.
 */
static int md_word_char(Py_UCS4 c) { return c == '_' || Py_UNICODE_ISALNUM(c); }

/* delimiter_lines(text): the line feed before each line that may be a pipe table's delimiter row, each
   `\n[ \t]*[|\-:][|\-: \t]*\r?(?=\n|\Z)` match's start (`kireme.text.markdown._DELIMITER_LINE`). */
static PyObject *delimiter_lines(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *text;
    if (!PyArg_ParseTuple(args, "U", &text)) return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    for (Py_ssize_t nl = next_newline(kind, data, 0, n); nl < n; nl = next_newline(kind, data, nl + 1, n)) {
        Py_ssize_t k = md_spaces(kind, data, n, nl + 1);
        Py_UCS4 c = MD_AT(k);
        if (c != '|' && c != '-' && c != ':') continue;
        Py_ssize_t e = k + 1;
        while (e < n) {
            Py_UCS4 x = PyUnicode_READ(kind, data, e);
            if (x != '|' && x != '-' && x != ':' && x != ' ' && x != '\t') break;
            e++;
        }
        if (e < n && PyUnicode_READ(kind, data, e) == '\r') e++;
        if (e < n && PyUnicode_READ(kind, data, e) != '\n') continue;
        if (append_index(out, nl) < 0) {
            Py_DECREF(out);
            return NULL;
        }
    }
    return out;
}

/* `heading_lines(text)`: kireme/text/openers.py `_heading_lines_python`: the start of every line whose first
 * character after spaces, tabs and ideographic spaces may begin a heading a plain text writes in its lines —
 * 第 or 附 (Japanese rules), `=` (a wiki), `§`, or one of the keywords of an English document's divisions
 * (`Part`, `PART`, `Chapter`…, `Exhibit`: kireme/text/openers.py `DIVISION_KEYWORDS`, which the tests hold
 * equal to these through the Python scan) followed by a space or a tab, or a line of three or more of one
 * of the other adornments a title is underlined with (`-`, `~`, `^`, `"`, `'`, `+`, `*`, `#`, `_`) and
 * nothing else. The keywords are checked here: in English prose a line opens with P, C, A, S or E every few
 * lines. */
static const char *const heading_keywords[] = {
    "Part", "PART", "Chapter", "CHAPTER", "Article", "ARTICLE", "Section", "SECTION",
    "Appendix", "APPENDIX", "Schedule", "SCHEDULE", "Annex", "ANNEX", "Exhibit", "EXHIBIT"};

/* a line of three or more of the adornment `c` from k, then only " \t\r" up to its end: a title's underline or
 * overline (kireme/text/underlines.py; `=` lines are all kept for the wiki reader anyway) */
static int adornment_line(int kind, const void *data, Py_ssize_t k, Py_ssize_t n, Py_UCS4 c) {
    Py_ssize_t e = k;
    while (e < n && PyUnicode_READ(kind, data, e) == c) e++;
    if (e - k < 3) return 0;
    while (e < n && is_adornment_pad(PyUnicode_READ(kind, data, e))) e++;
    return e == n || PyUnicode_READ(kind, data, e) == '\n';
}

static int opens_heading(int kind, const void *data, Py_ssize_t k, Py_ssize_t n) {
    Py_UCS4 c = PyUnicode_READ(kind, data, k);
    switch (c) {
    case 0x7B2C: case 0x9644: case '=': case 0x00A7: return 1;
    case '-': case '~': case '^': case '"': case '\'': case '+': case '*': case '#': case '_':
        return adornment_line(kind, data, k, n, c);
    case 'P': case 'C': case 'A': case 'S': case 'E': break;
    default: return 0;
    }
    for (size_t w = 0; w < sizeof heading_keywords / sizeof heading_keywords[0]; w++) {
        const char *word = heading_keywords[w];
        if ((Py_UCS4)(unsigned char)word[0] != c) continue;
        Py_ssize_t e = k + 1;
        const char *p = word + 1;
        while (*p && e < n && PyUnicode_READ(kind, data, e) == (Py_UCS4)(unsigned char)*p) {
            p++;
            e++;
        }
        if (*p == '\0' && e < n) {
            Py_UCS4 after = PyUnicode_READ(kind, data, e);
            if (after == ' ' || after == '\t') return 1;
        }
    }
    return 0;
}

/* Whether the line starting at `line` opens with a heading's first character (`opens_heading`) after blanks. */
static int heading_line(int kind, const void *data, Py_ssize_t line, Py_ssize_t n) {
    Py_ssize_t k = line;
    while (k < n && is_indent(PyUnicode_READ(kind, data, k))) k++;
    return k < n && opens_heading(kind, data, k, n);
}

static PyObject *heading_lines(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *text;
    if (!PyArg_ParseTuple(args, "U", &text)) return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    Py_ssize_t line = 0;
    while (line < n) {
        if (heading_line(kind, data, line, n) && append_index(out, line) < 0) goto fail;
        Py_ssize_t nl = next_newline(kind, data, line, n);
        if (nl >= n) break;
        line = nl + 1;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

static PyObject *line_marks(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *text;
    Py_ssize_t lo, hi;
    int closers;
    if (!PyArg_ParseTuple(args, "Unnp", &text, &lo, &hi, &closers)) return NULL;
    Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    if (hi > length) hi = length;
    if (lo < 0) lo = 0;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = hi; /* the search ends at hi, as `endpos` makes it */
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    for (Py_ssize_t nl = next_newline(kind, data, lo, n); nl < n; nl = next_newline(kind, data, nl + 1, n)) {
        Py_ssize_t k = md_spaces(kind, data, n, nl + 1);
        Py_UCS4 c = MD_AT(k);
        if (!closers) {
            if (c == '<' && k + 1 < n) {
                Py_UCS4 d = PyUnicode_READ(kind, data, k + 1);
                if ((d >= 'A' && d <= 'Z') || (d >= 'a' && d <= 'z') ||
                    (d == '!' && k + 3 < n && PyUnicode_READ(kind, data, k + 2) == '-' &&
                     PyUnicode_READ(kind, data, k + 3) == '-')) {
                    if (append_index(out, nl + 1) < 0) goto fail;
                }
            } else if (c == ':' && k + 2 < n && PyUnicode_READ(kind, data, k + 1) == ':' &&
                       PyUnicode_READ(kind, data, k + 2) == ':') {
                if (append_index(out, nl + 1) < 0) goto fail;
            }
            continue;
        }
        Py_ssize_t e = k;
        if (c == '<' && MD_AT(k + 1) == '/') {
            Py_UCS4 d = MD_AT(k + 2);
            if (!((d >= 'A' && d <= 'Z') || (d >= 'a' && d <= 'z'))) continue;
            e = k + 3;
            while (e < n) {
                Py_UCS4 x = PyUnicode_READ(kind, data, e);
                if (!(md_word_char(x) || x == '.' || x == ':' || x == '-')) break;
                e++;
            }
            e = md_spaces(kind, data, n, e);
            if (MD_AT(e) != '>') continue;
            e++;
        } else if (c == ':') {
            Py_ssize_t run = md_run(kind, data, n, k, ':');
            if (run < 3) continue;
            e = k + run;
        } else if (c == '-' && MD_AT(k + 1) == '-' && MD_AT(k + 2) == '>') {
            e = k + 3;
        } else {
            continue;
        }
        e = md_spaces(kind, data, n, e);
        /* `(?=\r?\n|\Z)` */
        if (!(e >= n || PyUnicode_READ(kind, data, e) == '\n' ||
              (PyUnicode_READ(kind, data, e) == '\r' && e + 1 < n && PyUnicode_READ(kind, data, e + 1) == '\n')))
            continue;
        if (append_index(out, nl) < 0 || append_index(out, e) < 0) goto fail;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/*
 * `line_end_marks(text, lo, hi, marks)`: each position p in [lo, hi) of a character of `marks` (at most 8) that
 * ends its line: nothing but blanks (space, tab, "\r", U+3000) from p + 1 to the next line feed or to hi. One
 * pass over the line feeds, one look back from each; kireme/text/leads.py `_at_line_ends` checks each with
 * its pattern (a superset of what the patterns find). Searching for ":" or "." through the text and
 * testing what follows each was a tenth of `markdown` on English papers.
 */
static PyObject *line_end_marks(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *text, *marks;
    Py_ssize_t lo, hi;
    if (!PyArg_ParseTuple(args, "UnnU", &text, &lo, &hi, &marks)) return NULL;
    Py_ssize_t count = PyUnicode_GET_LENGTH(marks);
    if (count > 8) {
        PyErr_SetString(PyExc_ValueError, "line_end_marks: at most 8 marks");
        return NULL;
    }
    Py_UCS4 wanted[8];
    for (Py_ssize_t i = 0; i < count; i++) wanted[i] = PyUnicode_READ_CHAR(marks, i);
    Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    if (hi > length) hi = length;
    if (lo < 0) lo = 0;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    if (lo >= hi || count == 0) return out;
    for (Py_ssize_t end = next_newline(kind, data, lo, hi);; end = next_newline(kind, data, end + 1, hi)) {
        Py_ssize_t p = end;
        while (p > lo) {
            Py_UCS4 c = PyUnicode_READ(kind, data, p - 1);
            if (c != ' ' && c != '\t' && c != '\r' && c != 0x3000) break;
            p--;
        }
        if (p > lo) {
            Py_UCS4 c = PyUnicode_READ(kind, data, p - 1);
            for (Py_ssize_t i = 0; i < count; i++) {
                if (c == wanted[i]) {
                    if (append_index(out, p - 1) < 0) goto fail;
                    break;
                }
            }
        }
        if (end >= hi) break;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/*
 * `sha256_extensions(on)`: hash chunk ids with the processor's SHA extensions (on: where it has them) or with
 * the portable loop (off); returns whether the extensions are in use now. For the tests, which hash with both.
 */
static PyObject *sha256_extensions(PyObject *self, PyObject *args) {
    (void)self;
    int on;
    if (!PyArg_ParseTuple(args, "p", &on)) return NULL;
    sha256_compress = sha256_block;
#ifdef KIREME_SHA_NI
    if (on && cpu_has_sha_ni()) sha256_compress = sha256_block_ni;
#endif
    return PyBool_FromLong(sha256_compress != sha256_block);
}

static PyMethodDef methods[] = {
    {"scan_sentence_cuts", scan_sentence_cuts, METH_VARARGS,
     "scan_sentence_cuts(text, a, b, block_starts) -> (cuts, quoted, pending)"},
    {"item_line_starts", item_line_starts, METH_VARARGS,
     "item_line_starts(text, start, b) -> the line starts in [start, b) where an item, title or label line begins"},
    {"ends_with_heading", ends_with_heading, METH_VARARGS,
     "ends_with_heading(text, pos) -> whether a cut at pos leaves a heading line at the end of a chunk"},
    {"trim_span", trim_span, METH_VARARGS,
     "trim_span(text, a, b, simple) -> (s, e) without the whitespace, or None where Python must decide"},
    {"paragraph_breaks", paragraph_breaks, METH_VARARGS,
     "paragraph_breaks(text) -> (break starts, block starts, breaks before items)"},
    {"scan_run", scan_run, METH_VARARGS,
     "scan_run(text, a, b, block_starts, item_breaks, caseless, abbreviations, may_end) -> (cuts, quoted, pending)"},
    {"line_break_cuts", line_break_cuts, METH_VARARGS,
     "line_break_cuts(text, a, b, item_breaks) -> the sentence starts after line breaks that end a sentence"},
    {"judge_periods", judge_periods, METH_VARARGS,
     "judge_periods(text, pending, a, b, caseless, abbreviations, may_end) -> (cuts, left to Python)"},
    {"all_simple", all_simple, METH_VARARGS,
     "all_simple(text, cuts, simple) -> whether every cut lies between two characters of simple"},
    {"merge_run", merge_run, METH_VARARGS,
     "merge_run(text, bounds, i, budget, keep_headings, simple, out) -> where Python must go on (-2 - i: "
     "headings only)"},
    {"make_chunks", make_chunks, METH_VARARGS,
     "make_chunks(cls, text, spans, ids, doc_id, unit, title, headings, metadata, embeds) -> chunks"},
    {"char_packed", char_packed, METH_VARARGS,
     "char_packed(cls, spans, budget) -> cls(start, end, end - start) per span, or None when one is over budget"},
    {"sentence_line_breaks", sentence_line_breaks, METH_VARARGS,
     "sentence_line_breaks(text, breaks, starts, marks, closers) -> the breaks that end a sentence"},
    {"drop_inside", drop_inside, METH_VARARGS, "drop_inside(cuts, starts, ends) -> cuts outside the spans"},
    {"optimal_back", optimal_back, METH_VARARGS,
     "optimal_back(total, ends, limits, ranks, cut_cost, hard, target, min_size, mix_cost, min_size_cost) -> "
     "(back, steps)"},
    {"char_windows", char_windows, METH_VARARGS,
     "char_windows(text, start, b, budget, simple, out, numbers) -> -1 when done, else where Python goes on"},
    {"pair_cuts", pair_cuts, METH_VARARGS,
     "pair_cuts(text, a, b, first, second) -> the p in (a, b) with text[p - 1] in first and text[p] in second"},
    {"line_cuts", line_cuts, METH_VARARGS,
     "line_cuts(text, a, b) -> the starts of the line breaks (\\r?\\n) strictly inside (a, b)"},
    {"sha256_extensions", sha256_extensions, METH_VARARGS,
     "sha256_extensions(on) -> whether chunk ids are hashed with the processor's SHA extensions now"},
    {"clause_cuts", clause_cuts, METH_VARARGS,
     "clause_cuts(text, a, b, labels=False) -> the cuts of the clause level (labels: none after a speaker's name)"},
    {"word_cuts", word_cuts, METH_VARARGS, "word_cuts(text, a, b) -> the cuts of the word level"},
    {"quoted_ends", quoted_ends, METH_VARARGS, "quoted_ends(text, a, b) -> the cuts of the quoted sentence level"},
    {"token_offsets", token_offsets, METH_VARARGS,
     "token_offsets(ids, counts, firsts) -> (starts, flags) of a token stream, as bytes"},
    {"kept_brackets", kept_brackets, METH_VARARGS,
     "kept_brackets(text, limit, fits=None) -> (starts, ends) of the outermost brackets that fit (limit "
     "characters, or fits(start, end))"},
    {"line_starts", line_starts, METH_VARARGS, "line_starts(text) -> 0 and the offset after every \\n"},
    {"plain_paragraph_starts", plain_paragraph_starts, METH_VARARGS,
     "plain_paragraph_starts(text) -> the paragraph starts of a text with no block syntax, else None"},
    {"line_end_marks", line_end_marks, METH_VARARGS,
     "line_end_marks(text, lo, hi, marks) -> where a character of marks ends its line (blanks after it)"},
    {"heading_lines", heading_lines, METH_VARARGS,
     "heading_lines(text) -> the start of each line that may open with a heading written in a plain text"},
    {"delimiter_lines", delimiter_lines, METH_VARARGS,
     "delimiter_lines(text) -> the line feed before each line that may be a pipe table's delimiter row"},
    {"line_marks", line_marks, METH_VARARGS,
     "line_marks(text, lo, hi, closers) -> the closing-tag lines' spans (flat) or the opening-tag lines' starts"},
    {"scan_blocks", scan_blocks, METH_VARARGS,
     "scan_blocks(text, pos) -> (block starts, headings, fences, pos, done): the simple Markdown blocks from pos"},
    {"reference_words", reference_words, METH_NOARGS, "reference_words() -> the words of sentences._REFERENCE_WORDS"},
    {"label_words", label_words, METH_NOARGS, "label_words() -> the words of sentences._LABEL_WORDS"},
    {"vocabulary", vocabulary, METH_NOARGS, "vocabulary() -> (terminators, closers, openers, their closers)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_speedups", "The sentence scanner's inner loop in C (kireme.text.sentences).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__speedups(void) {
#ifdef KIREME_SHA_NI
    if (cpu_has_sha_ni()) sha256_compress = sha256_block_ni;
#endif
    build_matters();
    build_mark_classes();
    if (PyType_Ready(&IdFieldType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "IdField", (PyObject *)&IdFieldType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
