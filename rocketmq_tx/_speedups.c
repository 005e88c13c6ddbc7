/*
 * rocketmq_tx._speedups: optional C versions of the per-message hot spots.
 *
 * Every function here has a pure-Python twin, which stays the reference: the tests hold the
 * two to each other (rocketmq_tx/common/test/test_native.py), and rocketmq_tx.common.native
 * falls back to Python when this module is missing or ROCKETMQ_TX_PURE is set. Profiling
 * showed the broker's and the store's time going to many small per-message steps (record
 * encoding, Java string hashes, index slots, property lookups, binary headers), each cheap in
 * C and tens of bytecodes in Python.
 *
 * Byte layouts are described in docs/store-format.md and docs/wire-protocol.md.
 */

#define _GNU_SOURCE /* sync_file_range */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <time.h>

/* the METH_* calling conventions fix every function's parameters, used or not (-Wextra) */
#pragma GCC diagnostic ignored "-Wunused-parameter"

#define MAGIC_V1 ((int32_t)-626843481)
#define MAGIC_V2 ((int32_t)-626843477)
#define MAGIC_BLANK ((int32_t)-875286124)
#define BORN_V6 0x10u
#define STORE_V6 0x20u
#define RECORD_HEAD 40 /* TOTALSIZE .. SYSFLAG */
#define RECORD_FIXED 88 /* everything up to and including BODYLENGTH with IPv4 hosts */
#define INDEX_HEADER 40
#define INDEX_SLOT 4
#define INDEX_ENTRY 20

/* Set by the Python modules that own them (_setup), so this module imports nothing itself. */
static PyObject *MessageFormatError;
static PyObject *RemoteProtocolError;
static PyObject *RemotingCommand;
static PyObject *SerializeRocketMQ;
static PyObject *LocalProtocolError;
static PyObject *s_code, *s_language, *s_version, *s_opaque, *s_flag, *s_remark, *s_ext_fields, *s_items;

static inline uint32_t rd32(const unsigned char *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline int16_t rd16s(const unsigned char *p) { return (int16_t)(uint16_t)((p[0] << 8) | p[1]); }
static inline int64_t rd64s(const unsigned char *p) { return (int64_t)(((uint64_t)rd32(p) << 32) | rd32(p + 4)); }
static inline void wr16(unsigned char *p, uint32_t v) { p[0] = (unsigned char)(v >> 8); p[1] = (unsigned char)v; }
static inline void wr32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24); p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8); p[3] = (unsigned char)v;
}
static inline void wr64(unsigned char *p, uint64_t v) { wr32(p, (uint32_t)(v >> 32)); wr32(p + 4, (uint32_t)v); }

static int check_setup(PyObject *needed)
{
    if (needed == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "rocketmq_tx._speedups used before _setup()");
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- Java String.hashCode */

/* h = 31*h + unit over the UTF-16 code units of s[start:end]; outside the BMP, two surrogates. */
static uint32_t hash_range(uint32_t h, PyObject *s, Py_ssize_t start, Py_ssize_t end)
{
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    if (kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *p = (const Py_UCS1 *)data;
        for (Py_ssize_t i = start; i < end; i++)
            h = 31u * h + p[i];
        return h;
    }
    for (Py_ssize_t i = start; i < end; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c >= 0x10000) {
            c -= 0x10000;
            h = 31u * h + (0xD800u + (c >> 10));
            h = 31u * h + (0xDC00u + (c & 0x3FFu));
        } else {
            h = 31u * h + c;
        }
    }
    return h;
}

static uint32_t hash_continue(uint32_t h, PyObject *s) { return hash_range(h, s, 0, PyUnicode_GET_LENGTH(s)); }

static PyObject *java_string_hash(PyObject *self, PyObject *arg)
{
    if (!PyUnicode_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "java_string_hash() needs a str");
        return NULL;
    }
    return PyLong_FromLong((long)(int32_t)hash_continue(0, arg));
}

/* abs(hash(topic + "#" + key)), 0 for Integer.MIN_VALUE: IndexService's key hash. */
static PyObject *topic_key_hash(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyUnicode_Check(args[0]) || !PyUnicode_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "topic_key_hash(topic: str, key: str)");
        return NULL;
    }
    uint32_t h = hash_continue(0, args[0]);
    h = 31u * h + '#';
    int32_t v = (int32_t)hash_continue(h, args[1]);
    if (v == INT32_MIN)
        v = 0;
    return PyLong_FromLong(v < 0 ? -(long)v : (long)v);
}

/* ---------------------------------------------------------------- properties */

/*
 * One property from a properties string: the last NAME\x01VALUE entry wins; empty is None.
 * Entries are split at 0x02, so *name* (which ends with 0x01) must not contain 0x02.
 */
static PyObject *get_property(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyBytes_Check(args[0]) || !PyBytes_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "get_property(properties: bytes, name: bytes)");
        return NULL;
    }
    const char *p = PyBytes_AS_STRING(args[0]);
    Py_ssize_t n = PyBytes_GET_SIZE(args[0]);
    const char *name = PyBytes_AS_STRING(args[1]);
    Py_ssize_t m = PyBytes_GET_SIZE(args[1]);
    const char *found = NULL, *found_end = NULL;
    const char *end = p + n;
    const char *entry = p;
    while (entry < end) {
        const char *next = memchr(entry, 2, (size_t)(end - entry));
        const char *entry_end = next ? next : end;
        if (entry_end - entry >= m && memcmp(entry, name, (size_t)m) == 0) {
            found = entry + m;
            found_end = entry_end;
        }
        if (!next)
            break;
        entry = next + 1;
    }
    if (found == NULL || found_end <= found)
        Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(found, found_end - found, "replace");
}

/* string_to_properties(text: str) -> dict: Java 4.9.1+ string2messageProperties (see the twin). */
static PyObject *string_to_properties(PyObject *self, PyObject *text)
{
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "string_to_properties() needs a str");
        return NULL;
    }
    PyObject *out = PyDict_New();
    if (out == NULL)
        return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), start = 0;
    while (start <= n && n > 0) {
        Py_ssize_t end = PyUnicode_FindChar(text, 2, start, n, 1);
        if (end == -2)
            goto fail;
        if (end == -1)
            end = n;
        Py_ssize_t sep = end > start ? PyUnicode_FindChar(text, 1, start, end, 1) : -1;
        if (sep == -2)
            goto fail;
        if (sep > start && end > sep + 1) {
            PyObject *k = PyUnicode_Substring(text, start, sep);
            PyObject *v = k ? PyUnicode_Substring(text, sep + 1, end) : NULL;
            int rc = (k && v) ? PyDict_SetItem(out, k, v) : -1;
            Py_XDECREF(k);
            Py_XDECREF(v);
            if (rc < 0)
                goto fail;
        }
        start = end + 1;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/*
 * record_properties(record: bytes) -> dict | None: the properties of one CommitLog record,
 * skipping everything else (the twin: rocketmq_tx.store.reader._record_properties). Every
 * length is compared with the space left, never added to a position first.
 */
static PyObject *record_properties(PyObject *self, PyObject *record)
{
    if (!PyBytes_Check(record)) {
        PyErr_SetString(PyExc_TypeError, "record_properties() needs bytes");
        return NULL;
    }
    const unsigned char *r = (const unsigned char *)PyBytes_AS_STRING(record);
    Py_ssize_t n = PyBytes_GET_SIZE(record);
    if (n < 40)
        Py_RETURN_NONE;
    int32_t magic = (int32_t)rd32(r + 4);
    uint32_t sys_flag = rd32(r + 36);
    Py_ssize_t at = 48 + ((sys_flag & BORN_V6) ? 20 : 8) + 8 + ((sys_flag & STORE_V6) ? 20 : 8) + 12;
    if (n - at < 4)
        Py_RETURN_NONE;
    int32_t body_length = (int32_t)rd32(r + at);
    if (body_length < 0 || n - at - 4 < body_length)
        Py_RETURN_NONE;
    at += 4 + body_length;
    if (magic == MAGIC_V2) {
        if (n - at < 2)
            Py_RETURN_NONE;
        int16_t topic_length = rd16s(r + at);
        if (topic_length < 0 || n - at - 2 < topic_length)
            Py_RETURN_NONE;
        at += 2 + topic_length;
    } else {
        if (n - at < 1)
            Py_RETURN_NONE;
        Py_ssize_t topic_length = r[at];
        if (n - at - 1 < topic_length)
            Py_RETURN_NONE;
        at += 1 + topic_length;
    }
    if (n - at < 2)
        Py_RETURN_NONE;
    int16_t length = rd16s(r + at);
    at += 2;
    if (length < 0 || n - at < length)
        Py_RETURN_NONE;
    if (length == 0)
        return PyDict_New();
    PyObject *text = PyUnicode_DecodeUTF8((const char *)r + at, length, "replace");
    if (text == NULL)
        return NULL;
    PyObject *out = string_to_properties(self, text);
    Py_DECREF(text);
    return out;
}

/*
 * k, v = item as Python unpacks it, as new references: an exact 2-tuple directly, anything
 * else through iter() (ValueError for another length, TypeError for a non-iterable).
 */
static int unpack_pair(PyObject *item, PyObject **k, PyObject **v)
{
    *k = *v = NULL;
    if (PyTuple_CheckExact(item) && PyTuple_GET_SIZE(item) == 2) {
        *k = Py_NewRef(PyTuple_GET_ITEM(item, 0));
        *v = Py_NewRef(PyTuple_GET_ITEM(item, 1));
        return 0;
    }
    PyObject *it = PyObject_GetIter(item);
    if (it == NULL)
        return -1;
    PyObject *extra = NULL;
    if ((*k = PyIter_Next(it)) != NULL && (*v = PyIter_Next(it)) != NULL && (extra = PyIter_Next(it)) == NULL &&
        !PyErr_Occurred()) {
        Py_DECREF(it);
        return 0;
    }
    if (!PyErr_Occurred())
        PyErr_SetString(PyExc_ValueError, extra ? "too many values to unpack (expected 2)"
                                                : "not enough values to unpack (expected 2)");
    Py_XDECREF(extra);
    Py_CLEAR(*k);
    Py_CLEAR(*v);
    Py_DECREF(it);
    return -1;
}

/*
 * properties_to_string(properties: dict) -> str: name 0x01 value joined by 0x02, None values
 * skipped, each formatted as f"{x}" formats it, in the order of the twin's comprehension over
 * properties.items(). A key's or value's __format__ can run any code, a change to the dict
 * included: each pair is owned (borrowed references from PyDict_Next once dangled here), an
 * exact dict is walked in place with the checks of Python's dict iterator (the same
 * RuntimeError, or the same answer), and anything else through its own items().
 */
static PyObject *properties_to_string(PyObject *self, PyObject *props)
{
    PyObject *it = NULL;
    Py_ssize_t pos = 0, used = 0, left = 0;
    if (PyDict_CheckExact(props)) {
        used = left = PyDict_GET_SIZE(props);
    } else {
        PyObject *items = PyObject_CallMethodNoArgs(props, s_items);
        if (items == NULL)
            return NULL;
        it = PyObject_GetIter(items);
        Py_DECREF(items);
        if (it == NULL)
            return NULL;
    }
    PyObject *parts = PyList_New(0);
    if (parts == NULL) {
        Py_XDECREF(it);
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t total = 0;
    Py_UCS4 maxchar = 127;
    for (;;) {
        PyObject *pair[2];
        if (it == NULL) {
            PyObject *k, *v;
            if (PyDict_GET_SIZE(props) != used) {
                PyErr_SetString(PyExc_RuntimeError, "dictionary changed size during iteration");
                goto done;
            }
            if (!PyDict_Next(props, &pos, &k, &v))
                break;
            if (left-- == 0) {
                PyErr_SetString(PyExc_RuntimeError, "dictionary keys changed during iteration");
                goto done;
            }
            pair[0] = Py_NewRef(k);
            pair[1] = Py_NewRef(v);
        } else {
            PyObject *item = PyIter_Next(it);
            if (item == NULL)
                break;
            int rc = unpack_pair(item, &pair[0], &pair[1]);
            Py_DECREF(item);
            if (rc < 0)
                goto done;
        }
        if (pair[1] == Py_None) {
            Py_DECREF(pair[0]);
            Py_DECREF(pair[1]);
            continue;
        }
        for (int i = 0; i < 2; i++) {
            PyObject *t = PyObject_Format(pair[i], NULL); /* exact str: a new reference, no call */
            if (t == NULL || PyList_Append(parts, t) < 0) {
                Py_XDECREF(t);
                Py_DECREF(pair[0]);
                Py_DECREF(pair[1]);
                goto done;
            }
            Py_ssize_t len = PyUnicode_GET_LENGTH(t);
            if (len > PY_SSIZE_T_MAX - 2 - total) {
                Py_DECREF(t);
                Py_DECREF(pair[0]);
                Py_DECREF(pair[1]);
                PyErr_SetString(PyExc_OverflowError, "join() result is too long for a Python string");
                goto done;
            }
            total += len;
            if (PyUnicode_MAX_CHAR_VALUE(t) > maxchar)
                maxchar = PyUnicode_MAX_CHAR_VALUE(t);
            Py_DECREF(t);
        }
        Py_DECREF(pair[0]);
        Py_DECREF(pair[1]);
        total += 2; /* 0x01 after the name, 0x02 after the value */
    }
    if (PyErr_Occurred())
        goto done;
    /* from here on only this function sees parts: no Python code runs */
    Py_ssize_t npairs = PyList_GET_SIZE(parts) / 2;
    if (npairs == 0) {
        result = PyUnicode_New(0, 0);
        goto done;
    }
    total -= 1; /* no separator after the last value */
    result = PyUnicode_New(total, maxchar);
    if (result == NULL)
        goto done;
    Py_ssize_t at = 0;
    for (Py_ssize_t i = 0; i < npairs; i++) {
        PyObject *name = PyList_GET_ITEM(parts, 2 * i), *value = PyList_GET_ITEM(parts, 2 * i + 1);
        if (PyUnicode_CopyCharacters(result, at, name, 0, PyUnicode_GET_LENGTH(name)) < 0)
            goto error;
        at += PyUnicode_GET_LENGTH(name);
        PyUnicode_WRITE(PyUnicode_KIND(result), PyUnicode_DATA(result), at, 1);
        at++;
        if (PyUnicode_CopyCharacters(result, at, value, 0, PyUnicode_GET_LENGTH(value)) < 0)
            goto error;
        at += PyUnicode_GET_LENGTH(value);
        if (i + 1 < npairs) {
            PyUnicode_WRITE(PyUnicode_KIND(result), PyUnicode_DATA(result), at, 2);
            at++;
        }
    }
    goto done;
error:
    Py_CLEAR(result);
done:
    Py_XDECREF(it);
    Py_DECREF(parts);
    return result;
}

/* ---------------------------------------------------------------- CommitLog records */

static int as_i32(PyObject *o, int32_t *out)
{
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < INT32_MIN || v > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "int32 out of range");
        return -1;
    }
    *out = (int32_t)v;
    return 0;
}

static int as_ll(PyObject *o, long long *out)
{
    *out = PyLong_AsLongLong(o);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

static int as_i64(PyObject *o, int64_t *out)
{
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred())
        return -1;
    *out = (int64_t)v;
    return 0;
}

/* An int attribute of *obj* (ROCKETMQ headers, the store's files). */
static int attr_long(PyObject *obj, PyObject *name, long long *out)
{
    PyObject *v = PyObject_GetAttr(obj, name);
    if (v == NULL)
        return -1;
    *out = PyLong_AsLongLong(v);
    Py_DECREF(v);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}


/* One record's fields, checked; body is a held buffer until record_release. */
typedef struct {
    PyObject *topic, *properties, *born_host, *store_host;
    Py_buffer body;
    int32_t queue_id, flag, reconsume_times, magic;
    int64_t queue_offset, commit_log_offset, born_ts, store_ts, prepared;
    uint32_t flags, crc;
    int width;
    Py_ssize_t total;
} Record;

static void record_release(Record *r) { PyBuffer_Release(&r->body); }

/* The exception set as the twin's MessageFormatError (its struct.pack's error). -1. */
static int field_error(void)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_Format(MessageFormatError, "a record field is out of range: %S", value ? value : Py_None);
    Py_XDECREF(type); Py_XDECREF(value); Py_XDECREF(tb);
    return -1;
}

/*
 * Checks the 15 encode_record arguments at *a* and sizes the record; on success the body
 * buffer is held (record_release). Errors are MessageFormatError, as the Python encoder's.
 */
static int record_prepare(Record *r, PyObject *const *a)
{
    PyObject *topic = a[0], *properties = a[2], *born_host = a[9], *store_host = a[11];
    if (!PyBytes_Check(topic) || !PyBytes_Check(properties) || !PyBytes_Check(born_host) ||
        !PyBytes_Check(store_host)) {
        PyErr_SetString(PyExc_TypeError, "topic, properties and hosts must be bytes");
        return -1;
    }
    r->topic = topic;
    r->properties = properties;
    r->born_host = born_host;
    r->store_host = store_host;
    Py_ssize_t born_len = PyBytes_GET_SIZE(born_host), store_len = PyBytes_GET_SIZE(store_host);
    int32_t sys_flag;
    if (as_i32(a[3], &r->queue_id) < 0 || as_i32(a[4], &r->flag) < 0 || as_i64(a[5], &r->queue_offset) < 0 ||
        as_i64(a[6], &r->commit_log_offset) < 0 || as_i32(a[7], &sys_flag) < 0 ||
        as_i64(a[8], &r->born_ts) < 0 || as_i64(a[10], &r->store_ts) < 0 ||
        as_i32(a[12], &r->reconsume_times) < 0 || as_i64(a[13], &r->prepared) < 0)
        return field_error();
    r->flags = (uint32_t)sys_flag & ~(BORN_V6 | STORE_V6);
    if (born_len == 20)
        r->flags |= BORN_V6;
    else if (born_len != 8) {
        PyErr_Format(MessageFormatError, "packed born host must have 8 or 20 bytes, not %zd", born_len);
        return -1;
    }
    if (store_len == 20)
        r->flags |= STORE_V6;
    else if (store_len != 8) {
        PyErr_Format(MessageFormatError, "packed store host must have 8 or 20 bytes, not %zd", store_len);
        return -1;
    }
    Py_ssize_t topic_len = PyBytes_GET_SIZE(topic);
    if (topic_len <= 127) {
        r->width = 1;
        r->magic = MAGIC_V1;
    } else if (topic_len <= 32767) {
        r->width = 2;
        r->magic = MAGIC_V2;
    } else {
        PyErr_Format(MessageFormatError, "topic is %zd bytes long; at most 32767 fit", topic_len);
        return -1;
    }
    Py_ssize_t props_len = PyBytes_GET_SIZE(properties);
    if (props_len > 32767) {
        PyErr_Format(MessageFormatError, "properties are %zd bytes long; at most 32767 fit", props_len);
        return -1;
    }
    if (PyObject_GetBuffer(a[1], &r->body, PyBUF_SIMPLE) < 0)
        return -1;
    if (a[14] == Py_None) {
        const unsigned char *bp = r->body.buf;
        Py_ssize_t left = r->body.len;
        uLong c = crc32(0L, Z_NULL, 0);
        while (left > 0) {
            uInt chunk = left > (Py_ssize_t)0x40000000 ? 0x40000000u : (uInt)left;
            c = crc32(c, bp, chunk);
            bp += chunk;
            left -= chunk;
        }
        r->crc = (uint32_t)c & 0x7FFFFFFFu;
    } else {
        int32_t given;
        if (as_i32(a[14], &given) < 0) { /* out of range or not an int, as struct.pack finds */
            record_release(r);
            return field_error();
        }
        r->crc = (uint32_t)given;
    }
    /* everything but the body is under 64 KiB; the body is compared with the room left, as
       adding it could overflow a 32-bit Py_ssize_t */
    Py_ssize_t rest = RECORD_FIXED + born_len - 8 + store_len - 8 + r->width + topic_len + 2 + props_len;
    if (r->body.len > INT32_MAX - rest) {
        PyErr_Format(MessageFormatError, "a record field is out of range: a body of %zd bytes", r->body.len);
        record_release(r);
        return -1;
    }
    r->total = rest + r->body.len;
    return 0;
}

/*
 * Writes the record at *w* (r->total bytes), TOTALSIZE last: a process killed in the middle
 * leaves TOTALSIZE as it was (0 in a fresh file), so recovery stops there.
 */
static void record_write(unsigned char *w0, const Record *r)
{
    unsigned char *w = w0;
    Py_ssize_t born_len = PyBytes_GET_SIZE(r->born_host), store_len = PyBytes_GET_SIZE(r->store_host);
    Py_ssize_t topic_len = PyBytes_GET_SIZE(r->topic), props_len = PyBytes_GET_SIZE(r->properties);
    wr32(w + 4, (uint32_t)r->magic);
    wr32(w + 8, r->crc);
    wr32(w + 12, (uint32_t)r->queue_id);
    wr32(w + 16, (uint32_t)r->flag);
    wr64(w + 20, (uint64_t)r->queue_offset);
    wr64(w + 28, (uint64_t)r->commit_log_offset);
    wr32(w + 36, r->flags);
    wr64(w + 40, (uint64_t)r->born_ts);
    w += 48;
    memcpy(w, PyBytes_AS_STRING(r->born_host), (size_t)born_len);
    w += born_len;
    wr64(w, (uint64_t)r->store_ts);
    w += 8;
    memcpy(w, PyBytes_AS_STRING(r->store_host), (size_t)store_len);
    w += store_len;
    wr32(w, (uint32_t)r->reconsume_times);
    wr64(w + 4, (uint64_t)r->prepared);
    wr32(w + 12, (uint32_t)r->body.len);
    w += 16;
    memcpy(w, r->body.buf, (size_t)r->body.len);
    w += r->body.len;
    if (r->width == 1) {
        *w++ = (unsigned char)topic_len;
    } else {
        wr16(w, (uint32_t)topic_len);
        w += 2;
    }
    memcpy(w, PyBytes_AS_STRING(r->topic), (size_t)topic_len);
    w += topic_len;
    wr16(w, (uint32_t)props_len);
    memcpy(w + 2, PyBytes_AS_STRING(r->properties), (size_t)props_len);
    /* keep the compiler from moving the TOTALSIZE store before the rest */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    wr32(w0, (uint32_t)r->total);
}

/*
 * encode_record(topic, body, properties, queue_id, flag, queue_offset, commit_log_offset,
 *               sys_flag, born_timestamp, born_host, store_timestamp, store_host,
 *               reconsume_times, prepared_transaction_offset, body_crc) -> bytes
 * Positional twin of messagecodec.encode_record (body_crc None computes it).
 */
static PyObject *encode_record(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_setup(MessageFormatError) < 0)
        return NULL;
    if (nargs != 15) {
        PyErr_SetString(PyExc_TypeError, "encode_record() takes 15 positional arguments");
        return NULL;
    }
    Record r;
    if (record_prepare(&r, args) < 0)
        return NULL;
    PyObject *out = PyBytes_FromStringAndSize(NULL, r.total);
    if (out != NULL)
        record_write((unsigned char *)PyBytes_AS_STRING(out), &r);
    record_release(&r);
    return out;
}

/*
 * validate_record(buf, offset, check_crc, topics) -> (size, topic, queue_id, phys, sys_flag)
 * Twin of commitlog.validate_record: (0, None, 0, 0, 0) for the BLANK filler, (-1, None, 0, 0, 0)
 * for anything invalid. *topics* caches decoded topic names by their bytes.
 */
static PyObject *validate_record(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyDict_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "validate_record(buf, offset, check_crc, topics: dict)");
        return NULL;
    }
    Py_ssize_t offset = PyLong_AsSsize_t(args[1]);
    if (offset == -1 && PyErr_Occurred()) {
        /* past any buffer either way: invalid, as for the twin */
        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
            return NULL;
        PyErr_Clear();
        offset = -1;
    }
    int check_crc = PyObject_IsTrue(args[2]);
    if (check_crc < 0)
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *buf = view.buf;
    /* every length below is checked against the bytes left (len > end - pos), never by adding
       to a position, so no input overflows (view.len - offset: both are non-negative) */
    Py_ssize_t avail = offset < 0 ? -1 : view.len - offset;
    int result = -1; /* -1 invalid, 0 blank, 1 valid */
    int32_t total = 0, queue_id = 0, sys_flag = 0;
    int64_t phys = 0;
    const unsigned char *topic_ptr = NULL;
    Py_ssize_t topic_length = 0;
    if (avail < RECORD_HEAD) {
        if (avail >= 8 && (int32_t)rd32(buf + offset + 4) == MAGIC_BLANK)
            result = 0;
        goto done;
    }
    const unsigned char *r = buf + offset;
    total = (int32_t)rd32(r);
    int32_t magic = (int32_t)rd32(r + 4);
    uint32_t crc = rd32(r + 8);
    queue_id = (int32_t)rd32(r + 12);
    phys = rd64s(r + 28);
    sys_flag = (int32_t)rd32(r + 36);
    int width;
    if (magic == MAGIC_V1)
        width = 1;
    else if (magic == MAGIC_V2)
        width = 2;
    else {
        if (magic == MAGIC_BLANK)
            result = 0;
        goto done;
    }
    if (total < RECORD_HEAD || total > avail)
        goto done;
    Py_ssize_t fixed = RECORD_FIXED + (((uint32_t)sys_flag & BORN_V6) ? 12 : 0) +
                       (((uint32_t)sys_flag & STORE_V6) ? 12 : 0);
    Py_ssize_t end = total; /* 0 < total <= avail: the record is in the buffer */
    if (total < fixed + width + 2)
        goto done;
    int32_t body_length = (int32_t)rd32(r + fixed - 4);
    if (body_length < 0 || body_length > end - fixed - width - 2)
        goto done;
    Py_ssize_t body_end = fixed + body_length;
    topic_length = width == 1 ? r[body_end] : rd16s(r + body_end);
    if (topic_length <= 0 || (width == 1 && topic_length > 127) || topic_length > end - body_end - width - 2)
        goto done;
    Py_ssize_t topic_end = body_end + width + topic_length;
    int16_t props_length = rd16s(r + topic_end);
    if (props_length < 0 || props_length != end - topic_end - 2)
        goto done;
    if ((props_length ? r[end - 1] : r[topic_end - 1]) == 0)
        goto done;
    if (check_crc) {
        uLong c = crc32(crc32(0L, Z_NULL, 0), r + fixed, (uInt)body_length);
        if (((uint32_t)c & 0x7FFFFFFFu) != crc)
            goto done;
    }
    topic_ptr = r + body_end + width;
    result = 1;
done:;
    PyObject *topic = NULL;
    if (result == 1) {
        PyObject *key = PyBytes_FromStringAndSize((const char *)topic_ptr, topic_length);
        PyBuffer_Release(&view);
        if (key == NULL)
            return NULL;
        topic = PyDict_GetItemWithError(args[3], key);
        if (topic != NULL) {
            Py_INCREF(topic);
        } else if (PyErr_Occurred()) {
            Py_DECREF(key);
            return NULL;
        } else {
            topic = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(key), topic_length, "replace");
            if (topic == NULL || PyDict_SetItem(args[3], key, topic) < 0) {
                Py_DECREF(key);
                Py_XDECREF(topic);
                return NULL;
            }
            if (PyDict_GET_SIZE(args[3]) > 4096)
                PyDict_Clear(args[3]);
        }
        Py_DECREF(key);
        return Py_BuildValue("(iNiLi)", total, topic, queue_id, (long long)phys, sys_flag);
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("(iOiii)", result, Py_None, 0, 0, 0);
}

/* ---------------------------------------------------------------- IndexFile */

typedef struct {
    int64_t begin_ts, end_ts, begin_phy, end_phy;
    int32_t slot_count, count;
} IndexHeader;

/*
 * One entry, as Java IndexFile.putKey writes it: chained to the slot's previous entry when that
 * one is valid, the slot then pointing at it; the header fields follow. 0, or -1 when the
 * position is outside the buffer.
 */
static int index_write(unsigned char *b, Py_ssize_t len, long long slots, long long base, IndexHeader *h,
                       int32_t key_hash, int64_t phy, int64_t ts)
{
    int64_t time_diff = 0;
    /* earlier than begin_ts clamps to 0; begin_ts > 0, so ts - begin_ts cannot overflow */
    if (h->begin_ts > 0 && ts > h->begin_ts) {
        time_diff = (ts - h->begin_ts) / 1000;
        if (time_diff > INT32_MAX)
            time_diff = INT32_MAX;
    }
    /* positions are checked against the room left, never computed past the buffer: base and
       the counts come from the caller; the int32 counts must not wrap either */
    long long slot_pos = INDEX_HEADER + (long long)(key_hash % slots) * INDEX_SLOT;
    if (slot_pos > len - INDEX_SLOT || base < 0 || base > len ||
        h->count > (len - base) / INDEX_ENTRY - 1 || h->count == INT32_MAX)
        return -1;
    long long pos = base + (long long)h->count * INDEX_ENTRY;
    int32_t slot_value = (int32_t)rd32(b + slot_pos);
    if (slot_value <= 0 || slot_value > h->count)
        slot_value = 0;
    if (slot_value == 0 && h->slot_count == INT32_MAX)
        return -1;
    wr32(b + pos, (uint32_t)key_hash);
    wr64(b + pos + 4, (uint64_t)phy);
    wr32(b + pos + 12, (uint32_t)time_diff);
    wr32(b + pos + 16, (uint32_t)slot_value);
    wr32(b + slot_pos, (uint32_t)h->count);
    if (h->count <= 1) {
        h->begin_phy = phy;
        h->begin_ts = ts;
    }
    if (slot_value == 0)
        h->slot_count++;
    h->count++;
    h->end_phy = phy;
    h->end_ts = ts;
    return 0;
}

/* Where one message's index entries go: the file's buffer, geometry and header state. */
typedef struct {
    unsigned char *buf;
    Py_ssize_t len;
    long long slots, index_num, base;
    IndexHeader h;
} IndexTarget;

/*
 * Walks one message's index items: uniq_key, each non-empty space-separated word of keys, and
 * "T#" + tags (each of the three may be None or empty), in that order, as topic#key. With
 * t NULL it only counts them. Otherwise the first *skip* are taken as written already and the
 * rest written while the file has room; *next* is then -1 when all are in, else the position
 * of the first that did not fit. Returns the number of items, or -1 when an entry would fall
 * outside the buffer. The header is rewritten once at the end, when something was written.
 */
static long long index_walk(IndexTarget *t, PyObject *topic, PyObject *uniq, PyObject *keys, PyObject *tags,
                            long long skip, int64_t phy, int64_t ts, long long *next)
{
    uint32_t prefix = 0;
    if (t != NULL)
        prefix = 31u * hash_range(0, topic, 0, PyUnicode_GET_LENGTH(topic)) + '#';
    long long item = 0;
    int wrote = 0;
    *next = -1;
    for (int part = 0; part < 3 && *next < 0; part++) {
        PyObject *s = part == 0 ? uniq : part == 1 ? keys : tags;
        if (s == Py_None)
            continue;
        Py_ssize_t n = PyUnicode_GET_LENGTH(s);
        if (n == 0)
            continue;
        int kind = PyUnicode_KIND(s);
        const void *data = PyUnicode_DATA(s);
        Py_ssize_t start = 0;
        while (start <= n) {
            Py_ssize_t end = n;
            if (part == 1) {
                end = start;
                while (end < n && PyUnicode_READ(kind, data, end) != ' ')
                    end++;
            }
            if (end > start) {
                if (t != NULL && item >= skip) {
                    if (t->h.count >= t->index_num) {
                        *next = item;
                        break;
                    }
                    uint32_t kh = prefix;
                    if (part == 2)
                        kh = 31u * (31u * kh + 'T') + '#';
                    int32_t sv = (int32_t)hash_range(kh, s, start, end);
                    if (sv == INT32_MIN)
                        sv = 0;
                    if (sv < 0)
                        sv = -sv;
                    if (index_write(t->buf, t->len, t->slots, t->base, &t->h, sv, phy, ts) < 0)
                        return -1;
                    wrote = 1;
                }
                item++;
            }
            start = end + 1;
        }
    }
    if (wrote) {
        unsigned char *b = t->buf;
        if (t->len < INDEX_HEADER)
            return -1;
        wr64(b, (uint64_t)t->h.begin_ts);
        wr64(b + 8, (uint64_t)t->h.end_ts);
        wr64(b + 16, (uint64_t)t->h.begin_phy);
        wr64(b + 24, (uint64_t)t->h.end_phy);
        wr32(b + 32, (uint32_t)t->h.slot_count);
        wr32(b + 36, (uint32_t)t->h.count);
    }
    return item;
}

static int check_index_args(PyObject *topic, PyObject *uniq, PyObject *keys, PyObject *tags, const char *who)
{
    if (!PyUnicode_Check(topic) || (uniq != Py_None && !PyUnicode_Check(uniq)) ||
        (keys != Py_None && !PyUnicode_Check(keys)) || (tags != Py_None && !PyUnicode_Check(tags))) {
        PyErr_Format(PyExc_TypeError, "%s: topic must be a str, the keys str or None", who);
        return -1;
    }
    return 0;
}

/* hash_slot_num, index_num, entries_base and the six header values, from *a* (9 ints). */
static int index_target_args(IndexTarget *t, PyObject *const *a)
{
    long long v[9];
    for (int i = 0; i < 9; i++) {
        v[i] = PyLong_AsLongLong(a[i]);
        if (v[i] == -1 && PyErr_Occurred())
            return -1;
    }
    if (v[0] <= 0 || v[7] < 0 || v[7] > INT32_MAX || v[8] < 0 || v[8] > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "index: argument out of range");
        return -1;
    }
    t->slots = v[0];
    t->index_num = v[1];
    t->base = v[2];
    IndexHeader h = {v[3], v[4], v[5], v[6], (int32_t)v[7], (int32_t)v[8]};
    t->h = h;
    return 0;
}

/*
 * index_put_keys(buf, hash_slot_num, index_num, entries_base,
 *                begin_ts, end_ts, begin_phy, end_phy, hash_slot_count, index_count,
 *                topic, uniq_key, keys, tags, skip, phy_offset, store_timestamp)
 *   -> (next, begin_ts, end_ts, begin_phy, end_phy, hash_slot_count, index_count)
 *
 * Indexes one message (index_walk); the first *skip* items are taken as written already.
 */
static PyObject *index_put_keys(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 17) {
        PyErr_SetString(PyExc_TypeError, "index_put_keys() takes 17 positional arguments");
        return NULL;
    }
    IndexTarget t;
    if (index_target_args(&t, args + 1) < 0)
        return NULL;
    /* one at a time: an __index__ must not run with an exception already set */
    long long skip, phy, ts;
    if (as_ll(args[14], &skip) < 0 || as_ll(args[15], &phy) < 0 || as_ll(args[16], &ts) < 0)
        return NULL;
    if (check_index_args(args[10], args[11], args[12], args[13], "index_put_keys") < 0)
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_WRITABLE) < 0)
        return NULL;
    t.buf = view.buf;
    t.len = view.len;
    long long next;
    long long items = index_walk(&t, args[10], args[11], args[12], args[13], skip, phy, ts, &next);
    PyBuffer_Release(&view);
    if (items < 0) {
        PyErr_SetString(PyExc_IndexError, "index_put_keys: position outside the index file");
        return NULL;
    }
    return Py_BuildValue("(LLLLLii)", next, (long long)t.h.begin_ts, (long long)t.h.end_ts,
                         (long long)t.h.begin_phy, (long long)t.h.end_phy, t.h.slot_count, t.h.count);
}

/* ---------------------------------------------------------------- one whole append */

#define END_FILE_MIN_BLANK 8

/* Attribute names of the store's objects that append_message reads and moves. */
static PyObject *s_topic, *s_body, *s_properties, *s_queue_id, *s_sys_flag, *s_born_timestamp,
    *s_reconsume_times, *s_prepared_transaction_offset, *s_tags_code, *s_mm, *s_wrote_position,
    *s_file_from_offset, *s_store_timestamp, *s_max_physic_offset, *s_hash_slot_num, *s_index_num,
    *s_entries_base, *s_begin_timestamp, *s_end_timestamp, *s_begin_phy_offset, *s_end_phy_offset,
    *s_hash_slot_count, *s_index_count;

/* An int attribute, its object kept in *keep (a new reference) to put back if need be. */
static int attr_keep(PyObject *obj, PyObject *name, long long *out, PyObject **keep)
{
    if ((*keep = PyObject_GetAttr(obj, name)) == NULL)
        return -1;
    *out = PyLong_AsLongLong(*keep);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

/*
 * The record at file position pos through pwrite, from a buffer reused across calls (the GIL
 * guards it). Why not the mapping: under SYNC_FLUSH the group commit's fdatasync runs beside
 * the appends, and writeback write-protects every page it cleans in every mapping of it,
 * with a TLB shootdown each; the next write through the mapping then takes a fault. Measured
 * on a 2-vCPU VM, that made this call 1.6 times as long on average and its p99 six times; a
 * pwrite touches no page table. 0, or -1 with OSError set and *written the bytes that did go
 * in (a short write before the error), for the caller to zero.
 */
static unsigned char *fd_record_buf;
static size_t fd_record_cap;

static int write_record_fd(int fd, long long pos, const Record *r, size_t *written)
{
    size_t total = (size_t)r->total;
    *written = 0;
    if (total > fd_record_cap) {
        size_t cap = total < 65536 ? 65536 : total;
        unsigned char *b = PyMem_Realloc(fd_record_buf, cap);
        if (b == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        fd_record_buf = b;
        fd_record_cap = cap;
    }
    record_write(fd_record_buf, r);
    size_t done = 0;
    while (done < total) {
        ssize_t n = pwrite(fd, fd_record_buf + done, total - done, (off_t)(pos + (long long)done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EIO;
            *written = done;
            PyErr_SetFromErrno(PyExc_OSError);
            return -1;
        }
        done += (size_t)n;
    }
    return 0;
}

/*
 * Zeros over [pos, pos + len) of the file, TOTALSIZE first, with pwrite: undoes the part of a
 * record a failed pwrite left (a file's bytes past its wrote_position are zeros: appends are
 * sequential and truncation zeroes). pwrite rather than the mapping: the disk may be failing,
 * and a page of the mapping that has to be read in would then raise SIGBUS. Best effort.
 */
static void zero_fd_range(int fd, long long pos, size_t len)
{
    static const unsigned char zeros[4096];
    size_t done = 0;
    while (done < len) {
        size_t n = done == 0 && len > 4 ? 4 : len - done < sizeof(zeros) ? len - done : sizeof(zeros);
        ssize_t w = pwrite(fd, zeros, n, (off_t)(pos + (long long)done));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        done += (size_t)w;
    }
}

/*
 * Takes back index_walk's entries count_from .. t->h.count - 1, newest first: each slot gets
 * the entry's link to the slot's previous entry (0 where that was not valid, which reads the
 * same), the entry is zeroed (past index_count, nobody reads it), the header goes back.
 */
static void index_undo(IndexTarget *t, int32_t count_from, const unsigned char *header)
{
    for (int32_t c = t->h.count - 1; c >= count_from; c--) {
        unsigned char *e = t->buf + t->base + (long long)c * INDEX_ENTRY;
        long long slot_pos = INDEX_HEADER + (long long)((int32_t)rd32(e) % t->slots) * INDEX_SLOT;
        wr32(t->buf + slot_pos, rd32(e + 16));
        memset(e, 0, INDEX_ENTRY);
    }
    memcpy(t->buf, header, INDEX_HEADER);
}

/* The attributes append_message moves, in the order it moves them (see there). */
enum { MV_BEGIN_TS, MV_END_TS, MV_BEGIN_PHY, MV_END_PHY, MV_SLOT_COUNT, MV_INDEX_COUNT, MV_MAX_PHYS,
       MV_CQ_POS, MV_CL_POS, MV_STORE_TS, MV_N };

/*
 * append_message(msg, clf, cqf, cq, xf, queue_offset, store_timestamp, topic_bytes, born_host,
 *                store_host, keys, uniq_key, tags, index_tags, body_crc, max_record, cl_fd=-1)
 *   -> None | (physical_offset, size, tags_code)
 *
 * A put's common case in one call (DefaultMessageStore.async_put_message): *msg* is a
 * MessageExtBrokerInner, *clf* the CommitLog's last MappedFile, *cqf* the last MappedFile of
 * ConsumeQueue *cq*, *xf* the last IndexFile or None (not indexed). When the queue is dense at
 * *queue_offset* and all three files have room, it writes the record (TOTALSIZE last), the
 * ConsumeQueue entry and the index entries (tags only with index_tags), and moves the files'
 * positions: clf.wrote_position and store_timestamp, cqf.wrote_position,
 * cq.max_physic_offset, and xf's header fields. Otherwise None, with nothing written or moved:
 * the general path handles it. *body_crc* None computes the CRC here.
 *
 * With *cl_fd* (the CommitLog file's descriptor) the record goes in with pwrite instead of
 * through the mapping (SYNC_FLUSH: see write_record_fd); the same bytes land in the same page
 * cache. A failed write raises OSError with nothing moved.
 *
 * Any exception leaves nothing written and nothing moved: whatever can fail (reading the
 * objects, sizes and room, index geometry, the new positions' objects and the result) comes
 * before the first byte is written; after it only the pwrite and setting the attributes can
 * fail, and then the bytes written are taken back (zeros, the index entries unlinked) and the
 * attributes already moved are set back to the objects read. store_timestamp, whose old
 * value is not read, is moved last.
 */
static PyObject *append_message(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_setup(MessageFormatError) < 0)
        return NULL;
    if (nargs != 16 && nargs != 17) {
        PyErr_SetString(PyExc_TypeError, "append_message() takes 16 or 17 positional arguments");
        return NULL;
    }
    int cl_fd = -1;
    if (nargs == 17) {
        long v = PyLong_AsLong(args[16]);
        if (v == -1 && PyErr_Occurred())
            return NULL;
        cl_fd = v < 0 || v > INT_MAX ? -1 : (int)v;
    }
    PyObject *msg = args[0], *clf = args[1], *cqf = args[2], *cq = args[3], *xf = args[4];
    PyObject *keys = args[10], *uniq = args[11], *tags = args[12];
    int indexed = xf != Py_None;
    int index_tags = PyObject_IsTrue(args[13]);
    if (index_tags < 0)
        return NULL;
    long long queue_offset, max_record;
    if (as_ll(args[5], &queue_offset) < 0 || as_ll(args[15], &max_record) < 0)
        return NULL;
    /* targets, names, old and new values of what is moved at the end */
    PyObject *mv_obj[MV_N] = {xf, xf, xf, xf, xf, xf, cq, cqf, clf, clf};
    PyObject *mv_name[MV_N] = {s_begin_timestamp, s_end_timestamp, s_begin_phy_offset, s_end_phy_offset,
                               s_hash_slot_count, s_index_count, s_max_physic_offset, s_wrote_position,
                               s_wrote_position, s_store_timestamp};
    PyObject *mv_old[MV_N] = {NULL}, *mv_new[MV_N] = {NULL};
    PyObject *got[10] = {NULL};
    PyObject *result = NULL, *placed = NULL;
    Record r;
    int prepared = 0;
    Py_buffer cl, cq_view, idx;
    cl.obj = cq_view.obj = idx.obj = NULL;
    IndexTarget t;
    memset(&t, 0, sizeof(t));
    long long cl_pos, cl_from, cq_pos, cq_from, max_phys;
    if (attr_keep(clf, s_wrote_position, &cl_pos, &mv_old[MV_CL_POS]) < 0 ||
        attr_long(clf, s_file_from_offset, &cl_from) < 0 ||
        attr_keep(cqf, s_wrote_position, &cq_pos, &mv_old[MV_CQ_POS]) < 0 ||
        attr_long(cqf, s_file_from_offset, &cq_from) < 0 ||
        attr_keep(cq, s_max_physic_offset, &max_phys, &mv_old[MV_MAX_PHYS]) < 0)
        goto done;
    /* an empty ConsumeQueue file may need Java's leading filler; a gap or a repeat needs the
       general path's checks and log lines (and so do positions whose sums overflow) */
    long long phys, cq_end, cq_want;
    if (cl_pos < 0 || cq_pos <= 0 || __builtin_add_overflow(cl_from, cl_pos, &phys) ||
        __builtin_add_overflow(cq_from, cq_pos, &cq_end) || __builtin_mul_overflow(queue_offset, 20, &cq_want) ||
        cq_end != cq_want || phys < max_phys)
        goto none;
    if (indexed) {
        long long v[6];
        if (attr_long(xf, s_hash_slot_num, &t.slots) < 0 || attr_long(xf, s_index_num, &t.index_num) < 0 ||
            attr_long(xf, s_entries_base, &t.base) < 0)
            goto done;
        for (int i = 0; i < 6; i++) {
            if (attr_keep(xf, mv_name[MV_BEGIN_TS + i], &v[i], &mv_old[MV_BEGIN_TS + i]) < 0)
                goto done;
        }
        if (t.slots <= 0 || v[4] < 0 || v[4] > INT32_MAX || v[5] < 0 || v[5] > INT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "append_message: index header out of range");
            goto done;
        }
        IndexHeader h = {v[0], v[1], v[2], v[3], (int32_t)v[4], (int32_t)v[5]};
        t.h = h;
        /* a full file is replaced even for a message without keys: the general path does that */
        if (phys < t.h.end_phy || t.h.count >= t.index_num)
            goto none;
    }
    /* the record's 15 fields, in encode_record's order */
    static PyObject **names[10] = {&s_body, &s_properties, &s_queue_id, &s_flag, &s_sys_flag, &s_born_timestamp,
                                   &s_reconsume_times, &s_prepared_transaction_offset, &s_topic, &s_tags_code};
    for (int i = 0; i < 10; i++) {
        if ((got[i] = PyObject_GetAttr(msg, *names[i])) == NULL)
            goto done;
    }
    PyObject *topic = got[8];
    if (check_index_args(topic, uniq, keys, tags, "append_message") < 0)
        goto done;
    int64_t tags_code = 0;
    if (got[9] != Py_None) {
        if (as_i64(got[9], &tags_code) < 0)
            goto done;
    } else if (tags != Py_None) {
        tags_code = (int32_t)hash_continue(0, tags);
    }
    PyObject *fields[15] = {args[7], got[0], got[1], got[2], got[3], args[5], Py_None /* offset: below */,
                            got[4], got[5], args[8], args[6], args[9], got[6], got[7], args[14]};
    PyObject *zero = PyLong_FromLong(0);
    if (zero == NULL)
        goto done;
    fields[6] = zero;
    int rc = record_prepare(&r, fields);
    Py_DECREF(zero);
    if (rc < 0)
        goto done;
    prepared = 1;
    PyObject *itags = index_tags ? tags : Py_None;
    long long next, items = indexed ? index_walk(NULL, topic, uniq, keys, itags, 0, 0, 0, &next) : 0;
    if (r.total > max_record || (indexed && t.h.count + items > t.index_num))
        goto none;
    PyObject *cl_mm = PyObject_GetAttr(clf, s_mm);
    rc = cl_mm == NULL ? -1 : PyObject_GetBuffer(cl_mm, &cl, PyBUF_WRITABLE);
    Py_XDECREF(cl_mm);
    if (rc < 0)
        goto done;
    PyObject *cq_mm = PyObject_GetAttr(cqf, s_mm);
    rc = cq_mm == NULL ? -1 : PyObject_GetBuffer(cq_mm, &cq_view, PyBUF_WRITABLE);
    Py_XDECREF(cq_mm);
    if (rc < 0)
        goto done;
    if (indexed) {
        PyObject *x_mm = PyObject_GetAttr(xf, s_mm);
        rc = x_mm == NULL ? -1 : PyObject_GetBuffer(x_mm, &idx, PyBUF_WRITABLE);
        Py_XDECREF(x_mm);
        if (rc < 0)
            goto done;
    }
    /* room: lengths against the space left (cl_pos, cq_pos >= 0), no sum that can overflow */
    long long phys_end;
    if (r.total + END_FILE_MIN_BLANK > cl.len - cl_pos || cq_pos > cq_view.len - 20 ||
        __builtin_add_overflow(phys, (long long)r.total, &phys_end))
        goto none;
    if (indexed) {
        /* every slot and the entries count .. count + items - 1 in the buffer, so index_walk
           cannot stop half-way */
        t.buf = idx.buf;
        t.len = idx.len;
        if (t.slots > (t.len - INDEX_HEADER) / INDEX_SLOT || t.base < 0 || t.base > t.len ||
            t.h.count + items > (t.len - t.base) / INDEX_ENTRY || t.h.count + items > INT32_MAX ||
            t.h.slot_count + items > INT32_MAX) {
            PyErr_SetString(PyExc_IndexError, "append_message: position outside the index file");
            goto done;
        }
    }
    /* the new positions and the result, made before anything is written */
    if ((mv_new[MV_MAX_PHYS] = PyLong_FromLongLong(phys_end)) == NULL ||
        (mv_new[MV_CQ_POS] = PyLong_FromLongLong(cq_pos + 20)) == NULL ||
        (mv_new[MV_CL_POS] = PyLong_FromLongLong(cl_pos + r.total)) == NULL ||
        (mv_new[MV_STORE_TS] = PyLong_FromLongLong(r.store_ts)) == NULL ||
        (placed = Py_BuildValue("(LnL)", phys, r.total, (long long)tags_code)) == NULL)
        goto done;

    /* ---- writing: from here an error takes back what was written (undo) */
    r.commit_log_offset = phys;
    size_t written = 0;
    if (cl_fd >= 0) {
        if (write_record_fd(cl_fd, cl_pos, &r, &written) < 0) {
            zero_fd_range(cl_fd, cl_pos, written);
            goto done;
        }
    } else {
        record_write((unsigned char *)cl.buf + cl_pos, &r);
    }
    unsigned char *e = (unsigned char *)cq_view.buf + cq_pos, cq_old[20], header_old[INDEX_HEADER];
    memcpy(cq_old, e, 20);
    wr64(e, (uint64_t)phys);
    wr32(e + 8, (uint32_t)r.total);
    wr64(e + 12, (uint64_t)tags_code);
    int32_t count_from = t.h.count;
    int moved = 0;
    if (indexed) {
        memcpy(header_old, t.buf, INDEX_HEADER);
        if (index_walk(&t, topic, uniq, keys, itags, 0, phys, r.store_ts, &next) < 0) {
            PyErr_SetString(PyExc_IndexError, "append_message: position outside the index file");
            goto undo; /* cannot happen after the check above; the entries written are taken back */
        }
        long long hv[6] = {t.h.begin_ts, t.h.end_ts, t.h.begin_phy, t.h.end_phy, t.h.slot_count, t.h.count};
        for (int i = 0; i < 6; i++) {
            if ((mv_new[MV_BEGIN_TS + i] = PyLong_FromLongLong(hv[i])) == NULL)
                goto undo;
        }
    }
    /* the bytes are in: move the positions, the index header first, store_timestamp last */
    for (moved = indexed ? MV_BEGIN_TS : MV_MAX_PHYS; moved < MV_N; moved++) {
        if (PyObject_SetAttr(mv_obj[moved], mv_name[moved], mv_new[moved]) < 0)
            goto undo;
    }
    result = Py_NewRef(placed);
    goto done;
undo:;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    for (int i = moved - 1; i >= (indexed ? MV_BEGIN_TS : MV_MAX_PHYS); i--) {
        if (PyObject_SetAttr(mv_obj[i], mv_name[i], mv_old[i]) < 0)
            PyErr_Clear(); /* best effort: the first error is the one raised */
    }
    PyErr_Restore(type, value, tb);
    if (indexed)
        index_undo(&t, count_from, header_old);
    memcpy(e, cq_old, 20);
    /* through the mapping (held) even after a pwrite: a __setattr__ may have closed cl_fd, and
       the pages were written just now, so they are in memory */
    unsigned char *w = (unsigned char *)cl.buf + cl_pos;
    memset(w, 0, 4); /* TOTALSIZE first: recovery stops here whatever happens next */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    memset(w + 4, 0, (size_t)r.total - 4);
    goto done;
none:
    result = Py_NewRef(Py_None);
done:
    if (prepared)
        record_release(&r);
    for (int i = 0; i < 10; i++)
        Py_XDECREF(got[i]);
    for (int i = 0; i < MV_N; i++) {
        Py_XDECREF(mv_old[i]);
        Py_XDECREF(mv_new[i]);
    }
    Py_XDECREF(placed);
    if (cl.obj != NULL)
        PyBuffer_Release(&cl);
    if (cq_view.obj != NULL)
        PyBuffer_Release(&cq_view);
    if (idx.obj != NULL)
        PyBuffer_Release(&idx);
    return result;
}

/* ---------------------------------------------------------------- page warming */

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/*
 * populate(buf, start, end) -> 0 | errno
 * Faults in the pages of a writable mapping between start and end as a write would, without
 * writing (Linux MADV_POPULATE_WRITE), with the GIL released: a thread of its own takes the
 * page faults the appending thread would otherwise take. EINVAL: the kernel lacks it.
 */
static PyObject *populate(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "populate(buf, start, end)");
        return NULL;
    }
    Py_ssize_t start = PyLong_AsSsize_t(args[1]);
    if (start == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t end = PyLong_AsSsize_t(args[2]);
    if (end == -1 && PyErr_Occurred())
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_WRITABLE) < 0)
        return NULL;
    long page = sysconf(_SC_PAGESIZE);
    if (start < 0)
        start = 0;
    if (end > view.len)
        end = view.len;
    int err = 0;
    if (page > 0 && end > start) {
        uintptr_t base = (uintptr_t)view.buf;
        uintptr_t from = (base + (uintptr_t)start) & ~((uintptr_t)page - 1);
        uintptr_t to = base + (uintptr_t)end;
        if (from < base)
            from += (uintptr_t)page; /* never below the mapping */
        if (to > from) {
            Py_BEGIN_ALLOW_THREADS
            if (madvise((void *)from, to - from, MADV_POPULATE_WRITE) != 0)
                err = errno;
            Py_END_ALLOW_THREADS
        }
    }
    PyBuffer_Release(&view);
    return PyLong_FromLong(err);
}

/*
 * zero_fill(fd, start, end) -> 0 | errno
 * Writes zeros over [start, end) of a file with pwrite and waits until they are written back
 * (sync_file_range), with the GIL released. SYNC_FLUSH's page warmer runs it ahead of the
 * CommitLog's write position: a pre-allocated file's extents are "unwritten", and the first
 * write-back into one converts it in the journal, so every group commit's fdatasync would
 * also commit the journal; into extents already written it is one data write and a cache
 * flush. The zeros are the bytes an unwritten extent reads as, so nothing visible changes;
 * the caller makes sure no append reaches the range meanwhile.
 */
#define ZERO_CHUNK (256 * 1024)
static PyObject *zero_fill(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "zero_fill(fd, start, end)");
        return NULL;
    }
    long long fd, start, end;
    if (as_ll(args[0], &fd) < 0 || as_ll(args[1], &start) < 0 || as_ll(args[2], &end) < 0)
        return NULL;
    if (fd < 0 || fd > INT_MAX || start < 0 || end < start) {
        PyErr_SetString(PyExc_ValueError, "zero_fill: bad descriptor or range");
        return NULL;
    }
    static const unsigned char zeros[ZERO_CHUNK];
    int err = 0;
    Py_BEGIN_ALLOW_THREADS
    long long at = start;
    while (at < end && !err) {
        size_t n = end - at < ZERO_CHUNK ? (size_t)(end - at) : ZERO_CHUNK;
        ssize_t w = pwrite((int)fd, zeros, n, (off_t)at);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            err = w < 0 ? errno : EIO;
        else
            at += w;
    }
    if (!err && end > start &&
        sync_file_range((int)fd, (off_t)start, (off_t)(end - start),
                        SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) != 0)
        err = errno;
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(err);
}

/* ---------------------------------------------------------------- group commit flusher */

/*
 * SyncFlusher(flushed: int, hold: int = 0): the SYNC_FLUSH group commit's disk side, a pthread
 * that never takes the GIL. A put calls request(end) after writing its record; the thread
 * fdatasyncs the CommitLog files covering [flushed, requested) while further puts go on
 * appending, and publishes the new flushed offset. Waiters block in wait(offset, timeout)
 * with the GIL released, each woken alone once its offset is covered. Its Python twin is the
 * group commit thread flushing by itself (store/flush.py), which also stays the authority for
 * statuses and timeouts; this only takes the fdatasync off the GIL and starts it earlier.
 *
 * When a sync starts: at once for a waiter (one passing lead=True runs it itself when no sync
 * is running; otherwise it wakes the thread), and otherwise once hold bytes are unflushed. A
 * sync costs a fixed ~0.3 ms plus its pages, and on a small VM one running beside the
 * appending thread slows it by a third, so syncing every few puts that nobody waits for yet
 * costs more than it saves; bench/store.py chose the store's hold. One sync runs at a time.
 *
 * The files are registered with add_file(fd, from, to) before anything is written to them;
 * the flusher keeps a dup of each fd until the file is flushed to its end, so expiry or
 * shutdown closing the original never leaves it syncing a stale descriptor.
 */

#define FLUSHER_MAX_FILES 64

typedef struct {
    int fd;
    long long from, to;
} FlusherFile;

/* A thread in wait(): woken alone once its offset is flushed, never by another's progress
 * (a broadcast to 64 waiters costs 64 context switches per sync). Lives on its stack. */
typedef struct FlusherWaiter {
    long long offset;
    int woken;
    pthread_cond_t cv;
    struct FlusherWaiter *next;
} FlusherWaiter;

static pthread_condattr_t monotonic_condattr;

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t work; /* the thread: requested > flushed, or stop */
    FlusherWaiter *waiters;
    long long requested;
    long long flushed;   /* written under mu, read with atomic loads */
    FlusherFile files[FLUSHER_MAX_FILES];
    int nfiles;
    int error;           /* errno of the last failed sync, 0 after a good one */
    unsigned long long syncs, begun; /* completed and started syncs */
    long long hold;      /* unflushed bytes that start a sync when nobody waits yet */
    int kick;            /* a waiter is waiting: sync now */
    int syncing;         /* a sync is running (one at a time, by whichever thread) */
    int stop;
    /* all under mu, as stop() runs without the GIL beside wait() and the getters: the thread
       runs (started), one stop() joins it (joining), the others wait on joined until it ends */
    int started, joining;
    pthread_cond_t joined;
    pthread_t thread;
} FlusherState;

typedef struct {
    PyObject_HEAD
    FlusherState *st;
} SyncFlusherObject;

static void deadline_after(struct timespec *ts, double seconds)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    if (!(seconds > 0)) /* NaN too */
        seconds = 0;
    if (seconds > 1e6)
        seconds = 1e6;
    long long ns = (long long)(seconds * 1e9) + ts->tv_nsec;
    ts->tv_sec += (time_t)(ns / 1000000000LL);
    ts->tv_nsec = (long)(ns % 1000000000LL);
}

/* Whether hi > lo and hi - lo >= hold, without computing a difference that can overflow (the
 * offsets and hold are the caller's numbers; hi - lo fits an unsigned long long). */
static int gap_reaches(long long hi, long long lo, long long hold)
{
    return hi > lo && (hold <= 0 || (unsigned long long)hi - (unsigned long long)lo >= (unsigned long long)hold);
}

/* under mu: wake the waiters whose offsets are flushed (all of them when stopping) */
static void wake_waiters(FlusherState *st, int all)
{
    FlusherWaiter **link = &st->waiters;
    while (*link != NULL) {
        FlusherWaiter *w = *link;
        if (all || w->offset <= st->flushed) {
            *link = w->next;
            w->woken = 1;
            pthread_cond_signal(&w->cv);
        } else {
            link = &w->next;
        }
    }
}

/*
 * Under mu, with requested > flushed and no sync running: one sync of [flushed, requested),
 * by whichever thread calls it (the flusher thread, or a waiter leading). Releases mu during
 * the fdatasync; returns 0 or an errno, with mu held again.
 */
static int sync_once(FlusherState *st)
{
    int fds[FLUSHER_MAX_FILES];
    long long target = st->requested, at = st->flushed;
    int n = 0;
    for (int i = 0; i < st->nfiles && at < target; i++) {
        FlusherFile *f = &st->files[i];
        if (f->to <= at)
            continue;
        if (f->from > at)
            break; /* a hole: nothing registered holds these bytes */
        fds[n++] = f->fd;
        at = f->to;
    }
    if (at < target)
        return st->error = EINVAL;
    st->syncing = 1;
    st->kick = 0;
    __atomic_store_n(&st->begun, st->begun + 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&st->mu);
    int err = 0;
    for (int i = 0; i < n && !err; i++) {
        if (fdatasync(fds[i]) != 0)
            err = errno;
    }
    pthread_mutex_lock(&st->mu);
    st->syncing = 0;
    st->error = err;
    if (!err) {
        __atomic_store_n(&st->flushed, target, __ATOMIC_RELEASE);
        st->syncs++;
        /* files flushed to their end are done with; the newest stays for what follows */
        int keep = 0;
        while (keep < st->nfiles - 1 && st->files[keep].to <= target)
            close(st->files[keep++].fd);
        if (keep) {
            memmove(st->files, st->files + keep, (size_t)(st->nfiles - keep) * sizeof(FlusherFile));
            st->nfiles -= keep;
        }
        wake_waiters(st, 0);
    }
    if (st->waiters != NULL)
        st->kick = 1; /* waiters this sync did not cover: the flusher thread goes on */
    pthread_cond_signal(&st->work);
    return err;
}

static void *flusher_main(void *arg)
{
    FlusherState *st = arg;
    pthread_mutex_lock(&st->mu);
    for (;;) {
        while (st->syncing || (!st->stop && (st->requested <= st->flushed ||
                                             (!st->kick && !gap_reaches(st->requested, st->flushed, st->hold)))))
            pthread_cond_wait(&st->work, &st->mu);
        if (st->requested <= st->flushed)
            break; /* stopping with nothing left to sync */
        if (sync_once(st) != 0) {
            if (st->stop)
                break;
            /* a failing disk: retry, but not in a tight loop */
            struct timespec ts;
            deadline_after(&ts, 0.01);
            pthread_cond_timedwait(&st->work, &st->mu, &ts);
        }
    }
    wake_waiters(st, 1);
    pthread_mutex_unlock(&st->mu);
    return NULL;
}

static int flusher_init(SyncFlusherObject *self, PyObject *args, PyObject *kw)
{
    long long flushed, hold = 0;
    static char *kwlist[] = {"flushed", "hold", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "L|L", kwlist, &flushed, &hold))
        return -1;
    if (self->st != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "SyncFlusher is already initialised");
        return -1;
    }
    FlusherState *st = PyMem_RawCalloc(1, sizeof(FlusherState));
    if (st == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    pthread_mutex_init(&st->mu, NULL);
    pthread_cond_init(&st->work, &monotonic_condattr);
    pthread_cond_init(&st->joined, &monotonic_condattr);
    st->requested = st->flushed = flushed;
    st->hold = hold;
    self->st = st;
    return 0;
}

static PyObject *flusher_start(SyncFlusherObject *self, PyObject *unused)
{
    FlusherState *st = self->st;
    if (st == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "SyncFlusher: start() once, before stop()");
        return NULL;
    }
    int err = -1;
    /* under mu: a stop() running without the GIL reads started; the new thread waits for mu */
    pthread_mutex_lock(&st->mu);
    if (!st->started && !st->stop) {
        err = pthread_create(&st->thread, NULL, flusher_main, st);
        st->started = err == 0;
    }
    pthread_mutex_unlock(&st->mu);
    if (err < 0) {
        PyErr_SetString(PyExc_RuntimeError, "SyncFlusher: start() once, before stop()");
        return NULL;
    }
    if (err != 0) {
        errno = err;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    Py_RETURN_NONE;
}

/* stop(): sync what was requested, end the thread, close the duplicated descriptors */
static void flusher_stop_state(FlusherState *st)
{
    pthread_mutex_lock(&st->mu);
    st->stop = 1;
    pthread_cond_signal(&st->work);
    /* one caller joins the thread (twice would be undefined); any other waits for that, so
       that none closes the descriptors while the thread may still sync them */
    int join = st->started && !st->joining;
    if (join) {
        st->joining = 1;
    } else {
        while (st->joining)
            pthread_cond_wait(&st->joined, &st->mu);
    }
    pthread_mutex_unlock(&st->mu);
    if (join)
        pthread_join(st->thread, NULL);
    pthread_mutex_lock(&st->mu);
    if (join) {
        st->started = 0;
        st->joining = 0;
        pthread_cond_broadcast(&st->joined);
    }
    for (int i = 0; i < st->nfiles; i++)
        close(st->files[i].fd);
    st->nfiles = 0;
    wake_waiters(st, 1);
    pthread_mutex_unlock(&st->mu);
}

static PyObject *flusher_stop(SyncFlusherObject *self, PyObject *unused)
{
    if (self->st != NULL) {
        Py_BEGIN_ALLOW_THREADS
        flusher_stop_state(self->st);
        Py_END_ALLOW_THREADS
    }
    Py_RETURN_NONE;
}

static PyObject *flusher_add_file(SyncFlusherObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    FlusherState *st = self->st;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "add_file(fd, from_offset, to_offset)");
        return NULL;
    }
    long long fd, from, to;
    if (as_ll(args[0], &fd) < 0 || as_ll(args[1], &from) < 0 || as_ll(args[2], &to) < 0)
        return NULL;
    if (st == NULL || to <= from || fd < 0 || fd > INT_MAX) {
        PyErr_SetString(PyExc_ValueError, "add_file: an initialised flusher, a descriptor and from < to");
        return NULL;
    }
    int copy = fcntl((int)fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    pthread_mutex_lock(&st->mu);
    const char *why = NULL;
    if (st->stop)
        why = "add_file: the flusher is stopped";
    else if (st->nfiles == FLUSHER_MAX_FILES)
        why = "add_file: too many unflushed files";
    else if (st->nfiles && st->files[st->nfiles - 1].to > from)
        why = "add_file: files must be added in offset order";
    if (why == NULL) {
        if (st->nfiles == 0 && st->flushed < from) {
            /* the first file starts past the flushed offset: nothing before it is ours */
            __atomic_store_n(&st->flushed, from, __ATOMIC_RELEASE);
            if (st->requested < from)
                st->requested = from;
        }
        st->files[st->nfiles].fd = copy;
        st->files[st->nfiles].from = from;
        st->files[st->nfiles].to = to;
        st->nfiles++;
    }
    pthread_mutex_unlock(&st->mu);
    if (why != NULL) {
        close(copy);
        PyErr_SetString(PyExc_ValueError, why);
        return NULL;
    }
    Py_RETURN_NONE;
}

/* request(offset): have everything before offset synced; starts a sync when the thread is idle */
static PyObject *flusher_request(SyncFlusherObject *self, PyObject *arg)
{
    FlusherState *st = self->st;
    long long offset = PyLong_AsLongLong(arg);
    if (offset == -1 && PyErr_Occurred())
        return NULL;
    if (st == NULL) {
        PyErr_SetString(PyExc_ValueError, "SyncFlusher is not initialised");
        return NULL;
    }
    if (offset > __atomic_load_n(&st->flushed, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&st->mu);
        if (offset > st->requested) {
            st->requested = offset;
            if (gap_reaches(offset, st->flushed, st->hold))
                pthread_cond_signal(&st->work);
        }
        pthread_mutex_unlock(&st->mu);
    }
    Py_RETURN_NONE;
}

/*
 * wait(offset, timeout, lead=False) -> bool: whether offset is flushed; False after timeout or
 * stop(). A zero timeout only looks: it neither leads nor wakes the thread. A leading waiter
 * that finds no sync running does the sync itself, with the GIL released, rather than wake
 * the flusher thread and sleep until that wakes it in turn: two thread switches fewer per sync.
 */
static PyObject *flusher_wait(SyncFlusherObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    FlusherState *st = self->st;
    if (nargs != 2 && nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "wait(offset, timeout, lead=False)");
        return NULL;
    }
    long long offset;
    if (as_ll(args[0], &offset) < 0)
        return NULL;
    double timeout = PyFloat_AsDouble(args[1]);
    if (timeout == -1.0 && PyErr_Occurred())
        return NULL;
    int lead = 0;
    if (nargs == 3 && (lead = PyObject_IsTrue(args[2])) < 0)
        return NULL;
    if (st == NULL) {
        PyErr_SetString(PyExc_ValueError, "SyncFlusher is not initialised");
        return NULL;
    }
    if (__atomic_load_n(&st->flushed, __ATOMIC_ACQUIRE) >= offset)
        Py_RETURN_TRUE;
    /* a zero timeout only looks: no kick, so it cannot see a sync it started itself */
    if (!(timeout > 0))
        Py_RETURN_FALSE;
    int ok;
    Py_BEGIN_ALLOW_THREADS
    struct timespec ts;
    deadline_after(&ts, timeout);
    FlusherWaiter w = {.offset = offset, .woken = 0, .next = NULL};
    pthread_cond_init(&w.cv, &monotonic_condattr);
    pthread_mutex_lock(&st->mu);
    if (offset > st->requested)
        st->requested = offset;
    /* lead once: after a failed sync, the flusher thread's paced retries take over */
    if (lead && !st->syncing && st->flushed < offset && !st->stop && st->started)
        sync_once(st);
    if (st->flushed < offset && !st->stop && st->started) {
        st->kick = 1;
        pthread_cond_signal(&st->work);
        w.next = st->waiters;
        st->waiters = &w;
        while (!w.woken) {
            if (pthread_cond_timedwait(&w.cv, &st->mu, &ts) == ETIMEDOUT && !w.woken) {
                FlusherWaiter **link = &st->waiters;
                while (*link != &w)
                    link = &(*link)->next;
                *link = w.next;
                break;
            }
        }
    }
    ok = st->flushed >= offset;
    pthread_mutex_unlock(&st->mu);
    pthread_cond_destroy(&w.cv);
    Py_END_ALLOW_THREADS
    return PyBool_FromLong(ok);
}

static PyObject *flusher_get(SyncFlusherObject *self, void *which)
{
    FlusherState *st = self->st;
    if (st == NULL) {
        PyErr_SetString(PyExc_ValueError, "SyncFlusher is not initialised");
        return NULL;
    }
    long long v;
    /* the two a put reads: without the lock */
    if ((intptr_t)which == 0)
        return PyLong_FromLongLong(__atomic_load_n(&st->flushed, __ATOMIC_ACQUIRE));
    if ((intptr_t)which == 5)
        return PyLong_FromUnsignedLongLong(__atomic_load_n(&st->begun, __ATOMIC_ACQUIRE));
    pthread_mutex_lock(&st->mu);
    switch ((intptr_t)which) {
    case 1: v = st->requested; break;
    case 2: v = st->error; break;
    case 3: v = (long long)st->syncs; break;
    default: v = st->started && !st->stop; break;
    }
    pthread_mutex_unlock(&st->mu);
    return PyLong_FromLongLong(v);
}

static void flusher_dealloc(SyncFlusherObject *self)
{
    FlusherState *st = self->st;
    if (st != NULL) {
        Py_BEGIN_ALLOW_THREADS
        flusher_stop_state(st);
        Py_END_ALLOW_THREADS
        pthread_mutex_destroy(&st->mu);
        pthread_cond_destroy(&st->work);
        pthread_cond_destroy(&st->joined);
        PyMem_RawFree(st);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef flusher_methods[] = {
    {"start", (PyCFunction)flusher_start, METH_NOARGS, "Start the flushing thread."},
    {"stop", (PyCFunction)flusher_stop, METH_NOARGS,
     "Sync what was requested, end the thread and close the descriptors."},
    {"add_file", (PyCFunction)(void (*)(void))flusher_add_file, METH_FASTCALL,
     "Register a CommitLog file (fd, from, to) before anything is written to it."},
    {"request", (PyCFunction)flusher_request, METH_O, "Have everything before offset synced."},
    {"wait", (PyCFunction)(void (*)(void))flusher_wait, METH_FASTCALL,
     "wait(offset, timeout, lead=False) -> whether offset is flushed, waiting without the GIL; "
     "a leading waiter syncs itself when no sync runs."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef flusher_getset[] = {
    {"flushed", (getter)flusher_get, NULL, "Offset up to which the files are synced.", (void *)0},
    {"requested", (getter)flusher_get, NULL, "Highest offset requested.", (void *)1},
    {"error", (getter)flusher_get, NULL, "errno of the last failed sync (0: the last one succeeded).", (void *)2},
    {"syncs", (getter)flusher_get, NULL, "Successful syncs so far.", (void *)3},
    {"running", (getter)flusher_get, NULL, "Whether the thread runs.", (void *)4},
    {"begun", (getter)flusher_get, NULL, "Syncs started so far (a put requested after a change joins a later one).",
     (void *)5},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject SyncFlusherType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rocketmq_tx._speedups.SyncFlusher",
    .tp_basicsize = sizeof(SyncFlusherObject),
    .tp_dealloc = (destructor)flusher_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The SYNC_FLUSH group commit's fdatasync thread, running without the GIL.",
    .tp_methods = flusher_methods,
    .tp_getset = flusher_getset,
    .tp_init = (initproc)flusher_init,
    .tp_new = PyType_GenericNew,
};

/* ---------------------------------------------------------------- ROCKETMQ binary header */

/*
 * decode_rocketmq_header(data: bytes, body: bytes) -> RemotingCommand
 * Twin of serialization.decode_rocketmq_header, same errors (RemoteProtocolError).
 */
static PyObject *decode_rocketmq_header(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_setup(RemoteProtocolError) < 0 || check_setup(RemotingCommand) < 0 || check_setup(SerializeRocketMQ) < 0)
        return NULL;
    if (nargs != 2 || !PyBytes_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "decode_rocketmq_header(data: bytes, body)");
        return NULL;
    }
    const unsigned char *d = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    Py_ssize_t n = PyBytes_GET_SIZE(args[0]);
    if (n < 21)
        return PyErr_Format(RemoteProtocolError, "ROCKETMQ header of %zd bytes is shorter than 21", n);
    int code = rd16s(d);
    int language = d[2];
    int version = rd16s(d + 3);
    int32_t opaque = (int32_t)rd32(d + 5);
    int32_t flag = (int32_t)rd32(d + 9);
    int32_t remark_len = (int32_t)rd32(d + 13);
    Py_ssize_t pos = 17;
    /* lengths are compared with the bytes left, never added to a position: no overflow for
       any length, on 32-bit builds too */
    if (remark_len < 0 || remark_len > n - pos - 4)
        return PyErr_Format(RemoteProtocolError, "ROCKETMQ header remark length %d exceeds the header",
                            (int)remark_len);
    PyObject *remark = NULL, *ext = NULL, *result = NULL;
    if (remark_len) {
        remark = PyUnicode_DecodeUTF8((const char *)d + pos, remark_len, NULL);
        if (remark == NULL)
            goto decode_error;
    } else {
        remark = Py_NewRef(Py_None);
    }
    pos += remark_len;
    int32_t ext_len = (int32_t)rd32(d + pos);
    pos += 4;
    if (ext_len < 0 || ext_len > n - pos) {
        PyErr_Format(RemoteProtocolError, "ROCKETMQ header extFields length %d exceeds the header", (int)ext_len);
        goto fail;
    }
    ext = PyDict_New();
    if (ext == NULL)
        goto fail;
    const unsigned char *e = d + pos;
    Py_ssize_t p = 0;
    while (p < ext_len) {
        if (ext_len - p < 2)
            goto truncated;
        Py_ssize_t klen = rd16s(e + p);
        if (klen < 0)
            goto exceeds;
        if (klen > ext_len - p - 2 - 4)
            goto truncated;
        Py_ssize_t kend = p + 2 + klen;
        Py_ssize_t vlen = (int32_t)rd32(e + kend);
        if (vlen < 0 || vlen > ext_len - kend - 4)
            goto exceeds;
        Py_ssize_t vend = kend + 4 + vlen;
        if (klen && vlen) {
            PyObject *k = PyUnicode_DecodeUTF8((const char *)e + p + 2, klen, NULL);
            if (k == NULL)
                goto decode_error;
            PyObject *v = PyUnicode_DecodeUTF8((const char *)e + kend + 4, vlen, NULL);
            if (v == NULL) {
                Py_DECREF(k);
                goto decode_error;
            }
            int rc = PyDict_SetItem(ext, k, v);
            Py_DECREF(k);
            Py_DECREF(v);
            if (rc < 0)
                goto fail;
        }
        p = vend;
    }
    PyObject *argv[9];
    argv[0] = PyLong_FromLong(code);
    argv[1] = PyLong_FromLong(language);
    argv[2] = PyLong_FromLong(version);
    argv[3] = PyLong_FromLong(opaque);
    argv[4] = PyLong_FromLong(flag);
    argv[5] = remark;
    argv[6] = ext;
    argv[7] = args[1];
    argv[8] = SerializeRocketMQ;
    if (argv[0] && argv[1] && argv[2] && argv[3] && argv[4])
        result = PyObject_Vectorcall(RemotingCommand, argv, 9, NULL);
    for (int i = 0; i < 5; i++)
        Py_XDECREF(argv[i]);
    Py_DECREF(remark);
    Py_DECREF(ext);
    return result;
truncated:
    PyErr_SetString(RemoteProtocolError, "truncated extFields entry");
    goto fail;
exceeds:
    PyErr_SetString(RemoteProtocolError, "extFields entry exceeds the header");
    goto fail;
decode_error:
    if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_Format(RemoteProtocolError, "ROCKETMQ header holds invalid UTF-8: %S", value ? value : Py_None);
        Py_XDECREF(type); Py_XDECREF(value); Py_XDECREF(tb);
    }
fail:
    Py_XDECREF(remark);
    Py_XDECREF(ext);
    return NULL;
}

/*
 * A dict subclass's ext_fields.items(), as the twin iterates them, copied into a list of
 * exact 2-tuples that only this module sees (so no code of theirs runs between the passes).
 */
static PyObject *ext_items(PyObject *ext)
{
    PyObject *items = PyObject_CallMethodNoArgs(ext, s_items);
    if (items == NULL)
        return NULL;
    PyObject *it = PyObject_GetIter(items);
    Py_DECREF(items);
    if (it == NULL)
        return NULL;
    PyObject *list = PyList_New(0), *item;
    while (list != NULL && (item = PyIter_Next(it)) != NULL) {
        PyObject *k, *v, *pair = NULL;
        if (unpack_pair(item, &k, &v) == 0) {
            pair = PyTuple_Pack(2, k, v);
            Py_DECREF(k);
            Py_DECREF(v);
        }
        Py_DECREF(item);
        if (pair == NULL || PyList_Append(list, pair) < 0)
            Py_CLEAR(list);
        Py_XDECREF(pair);
    }
    if (PyErr_Occurred())
        Py_CLEAR(list);
    Py_DECREF(it);
    return list;
}

/*
 * The next ext_fields entry, as borrowed references: PyDict_Next on an exact dict (the passes
 * below run no Python code, so the dict cannot change under them), else from ext_items' list.
 */
static int ext_next(PyObject *ext, PyObject *owned, Py_ssize_t *pos, PyObject **k, PyObject **v)
{
    if (owned == NULL)
        return PyDict_Next(ext, pos, k, v);
    if (*pos >= PyList_GET_SIZE(owned))
        return 0;
    PyObject *pair = PyList_GET_ITEM(owned, *pos);
    ++*pos;
    *k = PyTuple_GET_ITEM(pair, 0);
    *v = PyTuple_GET_ITEM(pair, 1);
    return 1;
}

/*
 * encode_rocketmq_header(cmd: RemotingCommand) -> bytes
 * Twin of serialization.encode_rocketmq_header, same errors (LocalProtocolError).
 */
static PyObject *encode_rocketmq_header(PyObject *self, PyObject *cmd)
{
    if (check_setup(LocalProtocolError) < 0)
        return NULL;
    long long code, language, version, opaque, flag;
    if (attr_long(cmd, s_code, &code) < 0 || attr_long(cmd, s_language, &language) < 0 ||
        attr_long(cmd, s_version, &version) < 0 || attr_long(cmd, s_opaque, &opaque) < 0 ||
        attr_long(cmd, s_flag, &flag) < 0)
        return NULL;
    if (code < -0x8000 || code > 0x7FFF || version < -0x8000 || version > 0x7FFF)
        return PyErr_Format(LocalProtocolError,
                            "code %lld / version %lld do not fit the ROCKETMQ header's int16; use JSON", code, version);
    if (opaque < INT32_MIN || opaque > INT32_MAX || flag < INT32_MIN || flag > INT32_MAX)
        return PyErr_Format(PyExc_OverflowError, "opaque or flag out of int32 range");
    PyObject *remark = PyObject_GetAttr(cmd, s_remark);
    if (remark == NULL)
        return NULL;
    PyObject *ext = PyObject_GetAttr(cmd, s_ext_fields);
    if (ext == NULL) {
        Py_DECREF(remark);
        return NULL;
    }
    PyObject *out = NULL, *owned = NULL;
    const char *rp = "";
    Py_ssize_t rlen = 0;
    int remark_set = remark == Py_None ? 0 : PyObject_IsTrue(remark);
    if (remark_set < 0)
        goto done;
    if (remark_set) {
        if (!PyUnicode_Check(remark)) {
            PyErr_SetString(PyExc_TypeError, "remark must be a str");
            goto done;
        }
        rp = PyUnicode_AsUTF8AndSize(remark, &rlen);
        if (rp == NULL)
            goto done;
    }
    if (!PyDict_Check(ext)) {
        PyErr_SetString(PyExc_TypeError, "ext_fields must be a dict");
        goto done;
    }
    if (!PyDict_CheckExact(ext) && (owned = ext_items(ext)) == NULL)
        goto done;
    /* first pass: lengths (the UTF-8 forms are cached in the str objects for the second) */
    Py_ssize_t ext_len = 0, pos = 0;
    PyObject *k, *v;
    while (ext_next(ext, owned, &pos, &k, &v)) {
        Py_ssize_t kl, vl;
        /* the twin's order: the key's type and encoding, then the value's */
        if (!PyUnicode_Check(k) || PyUnicode_AsUTF8AndSize(k, &kl) == NULL || !PyUnicode_Check(v) ||
            PyUnicode_AsUTF8AndSize(v, &vl) == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "ext_fields keys and values must be str");
            goto done;
        }
        if (kl > 0x7FFF) {
            PyErr_Format(LocalProtocolError, "ext field key too long for ROCKETMQ header: %zd bytes", kl);
            goto done;
        }
        if (vl > INT32_MAX - 6 - kl - ext_len) { /* the sum stays within int32, on 32-bit builds too */
            PyErr_SetString(LocalProtocolError, "ROCKETMQ header too long");
            goto done;
        }
        ext_len += 2 + kl + 4 + vl;
    }
    if (ext_len > INT32_MAX || rlen > INT32_MAX - 21 - ext_len) {
        PyErr_SetString(LocalProtocolError, "ROCKETMQ header too long");
        goto done;
    }
    out = PyBytes_FromStringAndSize(NULL, 21 + rlen + ext_len);
    if (out == NULL)
        goto done;
    unsigned char *w = (unsigned char *)PyBytes_AS_STRING(out);
    wr16(w, (uint32_t)code);
    w[2] = (unsigned char)(language & 0xFF);
    wr16(w + 3, (uint32_t)version);
    wr32(w + 5, (uint32_t)opaque);
    wr32(w + 9, (uint32_t)flag);
    wr32(w + 13, (uint32_t)rlen);
    memcpy(w + 17, rp, (size_t)rlen);
    w += 17 + rlen;
    wr32(w, (uint32_t)ext_len);
    w += 4;
    pos = 0;
    while (ext_next(ext, owned, &pos, &k, &v)) {
        Py_ssize_t kl, vl;
        const char *kp = PyUnicode_AsUTF8AndSize(k, &kl);
        const char *vp = PyUnicode_AsUTF8AndSize(v, &vl);
        /* nothing since the first pass ran Python code, so the entries are the same; but never
           write past the end on that belief */
        if (kp == NULL || vp == NULL || ext_len < 6 + kl + vl) {
            Py_CLEAR(out);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "ext_fields changed during encoding");
            goto done;
        }
        ext_len -= 6 + kl + vl;
        wr16(w, (uint32_t)kl);
        memcpy(w + 2, kp, (size_t)kl);
        w += 2 + kl;
        wr32(w, (uint32_t)vl);
        memcpy(w + 4, vp, (size_t)vl);
        w += 4 + vl;
    }
    if (out != NULL && ext_len != 0) {
        Py_CLEAR(out);
        PyErr_SetString(PyExc_RuntimeError, "ext_fields changed during encoding");
    }
done:
    Py_XDECREF(owned);
    Py_DECREF(remark);
    Py_DECREF(ext);
    return out;
}

/* ---------------------------------------------------------------- JSON header, the plain shape */

static PyObject *SerializeJSON, *LanguageByName, *LanguageOther, *s_extFields;

/*
 * json_command(header: object, body: bytes) -> RemotingCommand | None
 * The command of a JSON header that orjson has parsed, when it has the shape every Java peer
 * writes: code, opaque, flag (and version, if present) ints, language a name or an int,
 * extFields absent or an object of strings, remark absent or a string. Anything else is None,
 * and serialization.decode_json_header's general path (the twin) reads it.
 */
static PyObject *json_command(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_setup(RemotingCommand) < 0 || check_setup(SerializeJSON) < 0 || check_setup(LanguageByName) < 0
        || check_setup(LanguageOther) < 0)
        return NULL;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "json_command(header, body)");
        return NULL;
    }
    PyObject *h = args[0];
    if (!PyDict_CheckExact(h))
        Py_RETURN_NONE;
    PyObject *code, *opaque, *flag, *version, *language, *remark, *ext;
    /* borrowed references; a lookup error is impossible with str keys in an exact dict */
    code = PyDict_GetItemWithError(h, s_code);
    opaque = PyDict_GetItemWithError(h, s_opaque);
    flag = PyDict_GetItemWithError(h, s_flag);
    version = PyDict_GetItemWithError(h, s_version);
    language = PyDict_GetItemWithError(h, s_language);
    remark = PyDict_GetItemWithError(h, s_remark);
    ext = PyDict_GetItemWithError(h, s_extFields);
    if (PyErr_Occurred())
        return NULL;
    if (code == NULL || !PyLong_CheckExact(code) || opaque == NULL || !PyLong_CheckExact(opaque) || flag == NULL
        || !PyLong_CheckExact(flag) || (version != NULL && !PyLong_CheckExact(version)))
        Py_RETURN_NONE;
    if (remark == Py_None)
        remark = NULL;
    if (remark != NULL && !PyUnicode_CheckExact(remark))
        Py_RETURN_NONE;
    PyObject *ext_fields;
    if (ext == NULL || ext == Py_None) {
        if ((ext_fields = PyDict_New()) == NULL)
            return NULL;
    } else if (PyDict_CheckExact(ext)) {
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (PyDict_Next(ext, &pos, &k, &v)) {
            if (!PyUnicode_CheckExact(v))
                Py_RETURN_NONE;
        }
        ext_fields = Py_NewRef(ext);
    } else {
        Py_RETURN_NONE;
    }
    PyObject *lang; /* new reference */
    if (language == NULL) {
        lang = PyLong_FromLong(0);
    } else if (PyUnicode_CheckExact(language)) {
        lang = PyDict_GetItemWithError(LanguageByName, language);
        if (lang == NULL && PyErr_Occurred()) {
            Py_DECREF(ext_fields);
            return NULL;
        }
        lang = Py_NewRef(lang != NULL ? lang : LanguageOther);
    } else if (PyLong_CheckExact(language)) {
        lang = Py_NewRef(language);
    } else {
        lang = Py_NewRef(LanguageOther);
    }
    PyObject *result = NULL, *zero = NULL;
    if (lang != NULL && (version != NULL || (zero = PyLong_FromLong(0)) != NULL)) {
        PyObject *argv[9] = {code, lang, version != NULL ? version : zero, opaque, flag,
                             remark != NULL ? remark : Py_None, ext_fields, args[1], SerializeJSON};
        result = PyObject_Vectorcall(RemotingCommand, argv, 9, NULL);
    }
    Py_XDECREF(zero);
    Py_XDECREF(lang);
    Py_DECREF(ext_fields);
    return result;
}

/* ---------------------------------------------------------------- POP extra info, the common shape */

static PyObject *ExtraInfo;

/* [+-]?[0-9]{1,max_digits} over p[0:n] into *out; 0, or -1 when it is not that */
static int plain_number(const char *p, Py_ssize_t n, int max_digits, long long *out)
{
    Py_ssize_t i = 0;
    int negative = 0;
    if (n > 0 && (p[0] == '+' || p[0] == '-')) {
        negative = p[0] == '-';
        i = 1;
    }
    if (n - i < 1 || n - i > max_digits)
        return -1;
    long long v = 0; /* at most 18 digits: no overflow */
    for (; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (p[i] - '0');
    }
    *out = negative ? -v : v;
    return 0;
}

/*
 * parse_extra_info(text: str) -> ExtraInfo | None
 * The 7- or 8-field extra info as ExtraInfo when every field has the shape extrainfo's regex
 * fast path accepts (numbers short enough to be in range whatever their digits); None for
 * anything else, which extrainfo.parse_extra_info's Python code reads (the twin).
 */
static PyObject *parse_extra_info(PyObject *self, PyObject *arg)
{
    if (check_setup(ExtraInfo) < 0)
        return NULL;
    if (!PyUnicode_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "parse_extra_info(text: str)");
        return NULL;
    }
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(arg, &n);
    if (s == NULL) { /* lone surrogates: not the common shape */
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    const char *start[9];
    Py_ssize_t len[9];
    int fields = 0;
    Py_ssize_t from = 0;
    for (Py_ssize_t i = 0; i <= n; i++) {
        if (i == n || s[i] == ' ') {
            if (fields == 8)
                Py_RETURN_NONE;
            start[fields] = s + from;
            len[fields++] = i - from;
            from = i + 1;
        }
    }
    if (fields != 7 && fields != 8)
        Py_RETURN_NONE;
    static const int digits[8] = {18, 18, 18, 9, 0, 0, 9, 18};
    long long v[8];
    for (int f = 0; f < fields; f++) {
        if (digits[f] == 0) {
            if (len[f] == 0)
                Py_RETURN_NONE;
        } else if (plain_number(start[f], len[f], digits[f], &v[f]) < 0) {
            Py_RETURN_NONE;
        }
    }
    PyObject *argv[8] = {NULL};
    PyObject *result = NULL;
    int made = 1;
    for (int f = 0; f < 8; f++) {
        if (f == 7 && fields == 7)
            argv[f] = Py_NewRef(Py_None);
        else if (digits[f] == 0)
            argv[f] = PyUnicode_DecodeUTF8(start[f], len[f], NULL);
        else
            argv[f] = PyLong_FromLongLong(v[f]);
        if (argv[f] == NULL)
            made = 0;
    }
    if (made)
        result = PyObject_Vectorcall(ExtraInfo, argv, 8, NULL);
    for (int f = 0; f < 8; f++)
        Py_XDECREF(argv[f]);
    return result;
}

/* ---------------------------------------------------------------- module */

/* _setup(name, value): the Python classes this module raises or builds, set by their owners. */
/* ---------------------------------------------------------------- metrics counting */

/* The four TopicMessageType metric values (rocketmq_tx.broker.metrics), made at import. */
static PyObject *s_normal, *s_fifo, *s_delay, *s_transaction, *s_tran_msg, *s_sharding_key;
static PyObject *s_delay_keys[5];

/* Java BrokerMetricsManager.getMessageType of a properties dict (see the twin): one of the
 * four constants, borrowed; NULL with an exception set on failure. */
static PyObject *message_type_of(PyObject *props)
{
    if (!PyDict_Check(props)) {
        PyErr_SetString(PyExc_TypeError, "message_type() needs a dict");
        return NULL;
    }
    PyObject *tran = PyDict_GetItemWithError(props, s_tran_msg); /* borrowed */
    if (tran == NULL && PyErr_Occurred())
        return NULL;
    if (tran != NULL && PyUnicode_Check(tran) && PyUnicode_GET_LENGTH(tran) == 4) {
        /* str.lower() == "true": only t/T r/R u/U e/E lower to those letters */
        static const char want[] = "true";
        int same = 1;
        for (Py_ssize_t i = 0; i < 4 && same; i++) {
            Py_UCS4 c = PyUnicode_READ_CHAR(tran, i);
            same = c < 128 && (c | 0x20) == (Py_UCS4)want[i];
        }
        if (same)
            return s_transaction;
    }
    int has = PyDict_Contains(props, s_sharding_key);
    if (has < 0)
        return NULL;
    if (has)
        return s_fifo;
    for (size_t i = 0; i < sizeof(s_delay_keys) / sizeof(s_delay_keys[0]); i++) {
        has = PyDict_Contains(props, s_delay_keys[i]);
        if (has < 0)
            return NULL;
        if (has)
            return s_delay;
    }
    return s_normal;
}

/* message_type(props: dict) -> str */
static PyObject *message_type(PyObject *self, PyObject *props)
{
    PyObject *kind = message_type_of(props);
    return kind == NULL ? NULL : Py_NewRef(kind);
}

/* list[i] += n for a list of Python numbers (a series row). */
static int row_add(PyObject *row, Py_ssize_t i, PyObject *n)
{
    PyObject *old = PyList_GET_ITEM(row, i); /* borrowed */
    PyObject *sum = PyNumber_Add(old, n);
    if (sum == NULL)
        return -1;
    PyList_SET_ITEM(row, i, sum);
    Py_DECREF(old);
    return 0;
}

/*
 * row[i] += a; row[j] += b, for a series row of exactly *width* numbers: a list of Python numbers, or
 * (the hot tables' rows, rocketmq_tx.metrics.core.SeriesTable(compact=True)) an
 * array.array('q'), added to in place: no int object made per add, and the row's numbers in
 * one block of memory rather than one object each.
 */
static int row_add2(PyObject *row, Py_ssize_t width, Py_ssize_t i, long long a, Py_ssize_t j, long long b)
{
    if (PyList_Check(row)) {
        if (PyList_GET_SIZE(row) != width) {
            PyErr_SetString(PyExc_TypeError, "a series row is not as wide as its table");
            return -1;
        }
        PyObject *va = PyLong_FromLongLong(a), *vb = va == NULL ? NULL : PyLong_FromLongLong(b);
        int rc = vb == NULL ? -1 : row_add(row, i, va);
        if (rc == 0)
            rc = row_add(row, j, vb);
        Py_XDECREF(va);
        Py_XDECREF(vb);
        return rc;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(row, &view, PyBUF_WRITABLE | PyBUF_FORMAT) < 0)
        return -1;
    int rc = -1;
    if (view.itemsize != 8 || view.format == NULL || strcmp(view.format, "q") != 0 || view.len != 8 * width) {
        PyErr_SetString(PyExc_TypeError, "a series row is a list or an array('q') of its table's width");
    } else {
        long long *v = (long long *)view.buf;
        long long x, y;
        if (__builtin_add_overflow(v[i], a, &x) || (i != j ? __builtin_add_overflow(v[j], b, &y)
                                                            : __builtin_add_overflow(x, b, &y))) {
            PyErr_SetString(PyExc_OverflowError, "a series row's number passed 2**63");
        } else {
            v[i] = x;
            v[j] = y;
            rc = 0;
        }
    }
    PyBuffer_Release(&view);
    return rc;
}

/*
 * The bounds tuples seen, as C doubles: a histogram's bounds are one tuple object for the
 * process' life, so each call finds its bucket without touching a float object per bound.
 * A tuple is kept (a strong reference) so that its address is never another's.
 */
#define BOUNDS_CACHED 8
#define BOUNDS_MAX 64
static struct {
    PyObject *tuple;
    Py_ssize_t n;
    double v[BOUNDS_MAX];
} bounds_cache[BOUNDS_CACHED];

/* The cached doubles of *bounds* (a tuple of floats), filling a slot on first sight; NULL
 * with TypeError if it is not such a tuple. *n* is set to its length. */
static const double *bounds_of(PyObject *bounds, Py_ssize_t *n)
{
    for (int k = 0; k < BOUNDS_CACHED && bounds_cache[k].tuple != NULL; k++) {
        if (bounds_cache[k].tuple == bounds) {
            *n = bounds_cache[k].n;
            return bounds_cache[k].v;
        }
    }
    if (!PyTuple_Check(bounds) || PyTuple_GET_SIZE(bounds) > BOUNDS_MAX)
        goto bad;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(bounds); i++) {
        if (!PyFloat_Check(PyTuple_GET_ITEM(bounds, i)))
            goto bad;
    }
    int k = 0;
    while (k < BOUNDS_CACHED && bounds_cache[k].tuple != NULL)
        k++;
    static double scratch[BOUNDS_MAX]; /* a full cache (tests make many tuples): not cached */
    double *v = k < BOUNDS_CACHED ? bounds_cache[k].v : scratch;
    *n = PyTuple_GET_SIZE(bounds);
    for (Py_ssize_t i = 0; i < *n; i++)
        v[i] = PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(bounds, i));
    if (k < BOUNDS_CACHED) {
        bounds_cache[k].tuple = Py_NewRef(bounds);
        bounds_cache[k].n = *n;
    }
    return v;
bad:
    PyErr_SetString(PyExc_TypeError, "bounds must be a tuple of at most 64 floats");
    return NULL;
}

/* bisect.bisect_left(bounds, value) */
static Py_ssize_t bucket_of(const double *bounds, Py_ssize_t n, double value)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        if (bounds[i] >= value)
            return i;
    }
    return n;
}

/* One value into a histogram row (a count per bucket, then the sum). */
static int histogram_add(PyObject *row, const double *bounds, Py_ssize_t n, long long value)
{
    return row_add2(row, n + 2, bucket_of(bounds, n, (double)value), 1, n + 1, value);
}

/*
 * The arguments of a call through partial(f, state): state's items, then the call's. One
 * tuple bound rather than its items keeps partial's call within CPython's small stack
 * (_PY_FASTCALL_SMALL_STACK, 5 arguments): past it, partial allocates an argument array on
 * every call, and these run on every request.
 */
static int unpack_state(PyObject *const *argv, Py_ssize_t nargs, Py_ssize_t nstate, Py_ssize_t ncall, PyObject **out)
{
    if (nargs != 1 + ncall || !PyTuple_Check(argv[0]) || PyTuple_GET_SIZE(argv[0]) != nstate)
        return -1;
    for (Py_ssize_t i = 0; i < nstate; i++)
        out[i] = PyTuple_GET_ITEM(argv[0], i);
    for (Py_ssize_t i = 0; i < ncall; i++)
        out[nstate + i] = argv[1 + i];
    return 0;
}

/*
 * count_message_in((cache, fallback, bounds), topic, props, msg_num, wrote_bytes) -> None:
 * rocketmq_messages_in and rocketmq_message_size for one stored send (see the twin); the rows
 * are cache[topic][message_type(props)], and a miss is handed to *fallback* as
 * (topic, msg_type, msg_num, wrote_bytes). Two lookups on keys whose hashes are cached (a
 * str, an interned type name) and no key object made: this runs on every send.
 */
static PyObject *count_message_in(PyObject *self, PyObject *const *argv, Py_ssize_t nargs)
{
    PyObject *args[7];
    if (unpack_state(argv, nargs, 3, 4, args) < 0 || !PyDict_Check(args[0]) || !PyLong_Check(args[5])
        || !PyLong_Check(args[6])) {
        PyErr_SetString(PyExc_TypeError,
                        "count_message_in((cache: dict, fallback, bounds), topic, props: dict, msg_num: int, "
                        "wrote_bytes: int)");
        return NULL;
    }
    Py_ssize_t nbounds;
    const double *bounds = bounds_of(args[2], &nbounds);
    if (bounds == NULL)
        return NULL;
    PyObject *kind = message_type_of(args[4]); /* borrowed */
    if (kind == NULL)
        return NULL;
    PyObject *rows = NULL;
    PyObject *types = PyDict_GetItemWithError(args[0], args[3]); /* borrowed */
    if (types == NULL && PyErr_Occurred())
        return NULL;
    if (types != NULL) {
        if (!PyDict_Check(types)) {
            PyErr_SetString(PyExc_TypeError, "count_message_in: a cache entry is {msg_type: (row, size_row)}");
            return NULL;
        }
        rows = PyDict_GetItemWithError(types, kind); /* borrowed */
        if (rows == NULL && PyErr_Occurred())
            return NULL;
    }
    if (rows == NULL) {
        PyObject *argv[4] = {args[3], kind, args[5], args[6]};
        return PyObject_Vectorcall(args[1], argv, 4, NULL);
    }
    if (!PyTuple_Check(rows) || PyTuple_GET_SIZE(rows) != 2) {
        PyErr_SetString(PyExc_TypeError, "count_message_in: a cache entry is {msg_type: (row, size_row)}");
        return NULL;
    }
    long long num = PyLong_AsLongLong(args[5]), wrote = PyLong_AsLongLong(args[6]);
    if ((num == -1 || wrote == -1) && PyErr_Occurred())
        return NULL;
    if (row_add2(PyTuple_GET_ITEM(rows, 0), 2, 0, num, 1, wrote) < 0)
        return NULL;
    /* wrote // num, Python's floor division */
    long long size = wrote;
    if (num > 1) {
        size = wrote / num;
        if ((wrote % num != 0) && ((wrote < 0) != (num < 0)))
            size -= 1;
    }
    if (histogram_add(PyTuple_GET_ITEM(rows, 1), bounds, nbounds, size) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/*
 * rpc_count((rows, fallback, long_polling_codes, bounds), request, response, started, later)
 * -> None: rocketmq_rpc_latency for one answered request (see the twin, RpcLatency.rpc_done);
 * the row is rows[code][response_code * 4 + (flag & RPC_ONEWAY) + long_polling] (RPC_ONEWAY
 * is 2), a miss handed to *fallback* with the last four arguments. The inner key is a small
 * int for every common response code, so no key object is made.
 */
static PyObject *rpc_count(PyObject *self, PyObject *const *argv, Py_ssize_t nargs)
{
    PyObject *args[8];
    if (unpack_state(argv, nargs, 4, 4, args) < 0 || !PyDict_Check(args[0]) || !PyAnySet_Check(args[2])
        || !PyFloat_Check(args[6])) {
        PyErr_SetString(PyExc_TypeError, "rpc_count((rows: dict, fallback, long_polling_codes: frozenset, bounds), "
                                         "request, response, started: float, later)");
        return NULL;
    }
    Py_ssize_t nbounds;
    const double *bounds = bounds_of(args[3], &nbounds);
    if (bounds == NULL)
        return NULL;
    PyObject *request = args[4], *response = args[5];
    if (response == Py_None)
        Py_RETURN_NONE;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* time.monotonic()'s clock */
    double now = (double)((long long)ts.tv_sec * 1000000000LL + ts.tv_nsec) / 1e9;
    long long elapsed_ms = (long long)((now - PyFloat_AS_DOUBLE(args[6])) * 1000.0);
    PyObject *code = NULL, *rcode = NULL, *flag = NULL, *key = NULL, *result = NULL, *row = NULL;
    if ((code = PyObject_GetAttr(request, s_code)) == NULL || (rcode = PyObject_GetAttr(response, s_code)) == NULL
        || (flag = PyObject_GetAttr(request, s_flag)) == NULL)
        goto done;
    long f = PyLong_AsLong(flag);
    if (f == -1 && PyErr_Occurred())
        goto done;
    int long_polling = PyObject_IsTrue(args[7]);
    if (long_polling < 0)
        goto done;
    if (long_polling && (long_polling = PySet_Contains(args[2], code)) < 0)
        goto done;
    PyObject *codes = PyDict_GetItemWithError(args[0], code); /* borrowed */
    if (codes == NULL && PyErr_Occurred())
        goto done;
    if (codes != NULL) {
        if (!PyDict_Check(codes)) {
            PyErr_SetString(PyExc_TypeError, "rpc_count: rows[code] is a dict");
            goto done;
        }
        int overflow = 0;
        long long rc = PyLong_AsLongLongAndOverflow(rcode, &overflow);
        if (rc == -1 && PyErr_Occurred())
            goto done;
        /* a response code too large for the key: the fallback's, which counts it in Python */
        if (!overflow && rc <= LLONG_MAX / 4 - 1 && rc >= LLONG_MIN / 4 + 1) {
            if ((key = PyLong_FromLongLong(rc * 4 + (f & 2) + long_polling)) == NULL)
                goto done;
            row = PyDict_GetItemWithError(codes, key); /* borrowed */
            if (row == NULL && PyErr_Occurred())
                goto done;
        }
    }
    if (row == NULL) {
        result = PyObject_Vectorcall(args[1], args + 4, 4, NULL);
        goto done;
    }
    if (histogram_add(row, bounds, nbounds, elapsed_ms) == 0)
        result = Py_NewRef(Py_None);
done:
    Py_XDECREF(code);
    Py_XDECREF(rcode);
    Py_XDECREF(flag);
    Py_XDECREF(key);
    return result;
}

static PyObject *setup(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "_setup(name: str, value)");
        return NULL;
    }
    const char *name = PyUnicode_AsUTF8(args[0]);
    if (name == NULL)
        return NULL;
    static const struct { const char *name; PyObject **slot; } slots[] = {
        {"MessageFormatError", &MessageFormatError},
        {"RemoteProtocolError", &RemoteProtocolError},
        {"RemotingCommand", &RemotingCommand},
        {"SerializeType.ROCKETMQ", &SerializeRocketMQ},
        {"LocalProtocolError", &LocalProtocolError},
        {"SerializeType.JSON", &SerializeJSON},
        {"LanguageByName", &LanguageByName},
        {"LanguageCode.OTHER", &LanguageOther},
        {"ExtraInfo", &ExtraInfo},
    };
    PyObject **slot = NULL;
    for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++) {
        if (strcmp(name, slots[i].name) == 0) {
            slot = slots[i].slot;
            break;
        }
    }
    if (slot == NULL)
        return PyErr_Format(PyExc_KeyError, "_setup: unknown name %R", args[0]);
    Py_XSETREF(*slot, Py_NewRef(args[1]));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"_setup", (PyCFunction)(void (*)(void))setup, METH_FASTCALL, NULL},
    {"java_string_hash", java_string_hash, METH_O, "Java String.hashCode() of a str, as a signed int32."},
    {"topic_key_hash", (PyCFunction)(void (*)(void))topic_key_hash, METH_FASTCALL,
     "abs(Java hash of topic + '#' + key), 0 for Integer.MIN_VALUE."},
    {"get_property", (PyCFunction)(void (*)(void))get_property, METH_FASTCALL,
     "One property's value from a properties string, or None."},
    {"string_to_properties", string_to_properties, METH_O, "A properties string as a dict."},
    {"properties_to_string", properties_to_string, METH_O, "A dict of properties as a properties string."},
    {"record_properties", record_properties, METH_O, "The properties of one CommitLog record, or None."},
    {"encode_record", (PyCFunction)(void (*)(void))encode_record, METH_FASTCALL, "One CommitLog record."},
    {"validate_record", (PyCFunction)(void (*)(void))validate_record, METH_FASTCALL,
     "Structural check of a CommitLog record (recovery)."},
    {"index_put_keys", (PyCFunction)(void (*)(void))index_put_keys, METH_FASTCALL,
     "IndexFile entries for one message's keys."},
    {"populate", (PyCFunction)(void (*)(void))populate, METH_FASTCALL,
     "Fault in a writable mapping's pages ahead of use, without the GIL (MADV_POPULATE_WRITE)."},
    {"zero_fill", (PyCFunction)(void (*)(void))zero_fill, METH_FASTCALL,
     "Write zeros over a file range and wait for their write-back, without the GIL."},
    {"append_message", (PyCFunction)(void (*)(void))append_message, METH_FASTCALL,
     "One message's CommitLog record, ConsumeQueue entry and index entries, when all fit."},
    {"encode_rocketmq_header", encode_rocketmq_header, METH_O, "The ROCKETMQ binary header of a RemotingCommand."},
    {"decode_rocketmq_header", (PyCFunction)(void (*)(void))decode_rocketmq_header, METH_FASTCALL,
     "A ROCKETMQ binary header as a RemotingCommand."},
    {"json_command", (PyCFunction)(void (*)(void))json_command, METH_FASTCALL,
     "The RemotingCommand of an orjson-parsed JSON header of the plain shape, or None."},
    {"parse_extra_info", parse_extra_info, METH_O, "A POP extra-info string of the common shape, or None."},
    {"message_type", message_type, METH_O, "The TopicMessageType metric value of a send's properties."},
    {"count_message_in", (PyCFunction)(void (*)(void))count_message_in, METH_FASTCALL,
     "rocketmq_messages_in and rocketmq_message_size for one stored send."},
    {"rpc_count", (PyCFunction)(void (*)(void))rpc_count, METH_FASTCALL,
     "rocketmq_rpc_latency for one answered request."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "rocketmq_tx._speedups",
    "Optional C versions of per-message hot spots; see rocketmq_tx.common.native.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__speedups(void)
{
    struct { PyObject **slot; const char *text; } names[] = {
        {&s_code, "code"}, {&s_language, "language"}, {&s_version, "version"}, {&s_opaque, "opaque"},
        {&s_flag, "flag"}, {&s_remark, "remark"}, {&s_ext_fields, "ext_fields"}, {&s_items, "items"},
        {&s_extFields, "extFields"},
        {&s_topic, "topic"}, {&s_body, "body"}, {&s_properties, "properties"}, {&s_queue_id, "queue_id"},
        {&s_sys_flag, "sys_flag"}, {&s_born_timestamp, "born_timestamp"}, {&s_reconsume_times, "reconsume_times"},
        {&s_prepared_transaction_offset, "prepared_transaction_offset"}, {&s_tags_code, "tags_code"},
        {&s_mm, "mm"}, {&s_wrote_position, "wrote_position"}, {&s_file_from_offset, "file_from_offset"},
        {&s_store_timestamp, "store_timestamp"}, {&s_max_physic_offset, "max_physic_offset"},
        {&s_hash_slot_num, "hash_slot_num"}, {&s_index_num, "index_num"}, {&s_entries_base, "_entries_base"},
        {&s_begin_timestamp, "begin_timestamp"}, {&s_end_timestamp, "end_timestamp"},
        {&s_begin_phy_offset, "begin_phy_offset"}, {&s_end_phy_offset, "end_phy_offset"},
        {&s_hash_slot_count, "hash_slot_count"}, {&s_index_count, "index_count"},
        {&s_normal, "normal"}, {&s_fifo, "fifo"}, {&s_delay, "delay"}, {&s_transaction, "transaction"},
        {&s_tran_msg, "TRAN_MSG"}, {&s_sharding_key, "__SHARDINGKEY"},
        {&s_delay_keys[0], "__STARTDELIVERTIME"}, {&s_delay_keys[1], "DELAY"},
        {&s_delay_keys[2], "TIMER_DELIVER_MS"}, {&s_delay_keys[3], "TIMER_DELAY_SEC"},
        {&s_delay_keys[4], "TIMER_DELAY_MS"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (*names[i].slot == NULL && (*names[i].slot = PyUnicode_InternFromString(names[i].text)) == NULL)
            return NULL;
    }
    pthread_condattr_init(&monotonic_condattr);
    pthread_condattr_setclock(&monotonic_condattr, CLOCK_MONOTONIC);
    if (PyType_Ready(&SyncFlusherType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "SyncFlusher", (PyObject *)&SyncFlusherType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
