/* The SWIG interface of the Java binding's generated layer: SWIG reads capi/include/oneflow/oneflow_c.h
 * and writes the JNI wrapper (C) and the classes of org.oneflow.jni (OneflowC, OneflowCJNI,
 * OneflowCConstants, one proxy per options struct) at build time. Nothing it writes is edited or
 * committed; the idiomatic classes of org.oneflow sit on top.
 *
 * Mapping (kept close to C so that every function comes through, and cheap so that a call costs one
 * JNI transition):
 *   handles (of_session_t*, of_tensor_t*, const of_dtype_t*, ...)    long (the pointer)
 *   of_status_t* results                                             long: 0 = success; the Java
 *                                                                     layer (Status.check) reads,
 *                                                                     throws and frees every other
 *   T** out_x, int64_t* / size_t* / int32_t* / double* out_x         one-element arrays
 *   of_bool_t                                                        boolean (boolean[] for out_x)
 *   (const int64_t* dims, size_t n), (handle const* list, size_t n)  long[]
 *   (const void* data, size_t nbytes)                                a primitive array (copied) or a
 *                                                                     direct ByteBuffer
 *   (void* out_data, size_t nbytes)                                  the same, written on success
 *   of_tensor_adopt_data's (data, nbytes, deleter, user_data)        a direct ByteBuffer: a JNI global
 *                                                                     reference keeps it reachable
 *                                                                     until the library's deleter
 *                                                                     (ofj_release_buffer) runs
 *   const char* arguments                                            String, passed as NUL-terminated
 *                                                                     UTF-8 (not JNI's modified UTF-8)
 *   const char** out_name, of_status_message's result                 byte[] (UTF-8), decoded in Java
 *   options structs                                                  SWIG proxies, no finalize():
 *                                                                     the Java layer deletes them
 *   const char* fields of options structs                            String both ways; the proxy
 *                                                                     holds a copy (OF_STRING_FIELD) */
%module OneflowC

%{
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "oneflow/oneflow_c.h"
#include "oneflow/dlpack.h"

/* ---- Tensor.asByteBuffer: a direct ByteBuffer over an exported tensor's elements --------------- */
/* The export (a DLManagedTensorVersioned of of_tensor_to_dlpack) keeps the memory alive; the Java
 * layer calls its deleter (Tensor.dlpackDelete) once the buffer is unreachable. NULL unless the
 * tensor is a non-empty contiguous CPU tensor. */
JNIEXPORT jobject JNICALL Java_org_oneflow_Tensor_dlpackBuffer(JNIEnv* env, jclass cls, jlong managed) {
  const DLManagedTensorVersioned* m = (const DLManagedTensorVersioned*)(intptr_t)managed;
  const DLTensor* t = &m->dl_tensor;
  if (t->device.device_type != kDLCPU || t->data == NULL) return NULL;
  int64_t expected = 1;
  for (int32_t d = t->ndim - 1; d >= 0; --d) {
    if (t->shape[d] != 1 && t->strides[d] != expected) return NULL;
    expected *= t->shape[d];
  }
  if (expected == 0) return NULL;
  const jlong nbytes = (jlong)expected * (jlong)((t->dtype.bits * t->dtype.lanes + 7) / 8);
  return (*env)->NewDirectByteBuffer(env, (char*)t->data + t->byte_offset, nbytes);
}

JNIEXPORT void JNICALL Java_org_oneflow_Tensor_dlpackDelete(JNIEnv* env, jclass cls, jlong managed) {
  DLManagedTensorVersioned* m = (DLManagedTensorVersioned*)(intptr_t)managed;
  if (m != NULL && m->deleter != NULL) m->deleter(m);
}

/* ---- adopted direct ByteBuffers: a global reference, dropped by the library's deleter --------- */
static JavaVM* ofj_vm = NULL;
static long long ofj_released_buffers = 0; /* deleters run so far (tests count them) */
static long long ofj_adopted_buffers = 0;

static void ofj_release_buffer(void* data, void* user_data) {
  (void)data;
  JNIEnv* env = NULL;
  int attached = 0;
  if (ofj_vm == NULL) return;
  jint rc = (*ofj_vm)->GetEnv(ofj_vm, (void**)&env, JNI_VERSION_1_8);
  if (rc == JNI_EDETACHED) { /* a library thread: attach it for the one call */
    if ((*ofj_vm)->AttachCurrentThreadAsDaemon(ofj_vm, (void**)&env, NULL) != JNI_OK) return;
    attached = 1;
  } else if (rc != JNI_OK) {
    return;
  }
  (*env)->DeleteGlobalRef(env, (jobject)user_data);
  __atomic_add_fetch(&ofj_released_buffers, 1, __ATOMIC_SEQ_CST);
  if (attached) (*ofj_vm)->DetachCurrentThread(ofj_vm);
}

/* ---- primitive arrays: the element size of a Java array, 0 when it is not a primitive array ---- */
static jclass ofj_array_classes[8];
static const char* const ofj_array_names[8] = {"[Z", "[B", "[S", "[C", "[I", "[F", "[J", "[D"};
static const size_t ofj_array_sizes[8] = {1, 1, 2, 2, 4, 4, 8, 8};

static size_t ofj_element_size(JNIEnv* env, jobject o) {
  for (int i = 0; i < 8; ++i) {
    jclass c = __atomic_load_n(&ofj_array_classes[i], __ATOMIC_ACQUIRE);
    if (c == NULL) {
      jclass local = (*env)->FindClass(env, ofj_array_names[i]);
      if (local == NULL) return 0;
      jclass global = (jclass)(*env)->NewGlobalRef(env, local);
      (*env)->DeleteLocalRef(env, local);
      jclass expected = NULL;
      if (!__atomic_compare_exchange_n(&ofj_array_classes[i], &expected, global, 0, __ATOMIC_ACQ_REL,
                                       __ATOMIC_ACQUIRE)) {
        (*env)->DeleteGlobalRef(env, global);
        c = expected;
      } else {
        c = global;
      }
    }
    if ((*env)->IsInstanceOf(env, o, c)) return ofj_array_sizes[i];
  }
  return 0;
}

/* The bytes of `o`, a direct buffer or a primitive array: *direct is its address for a direct buffer
 * (NULL for an array); returns 0 (an exception thrown) when it is neither. */
static int ofj_bytes_of(JNIEnv* env, jobject o, void** direct, size_t* nbytes) {
  *direct = (*env)->GetDirectBufferAddress(env, o);
  if (*direct != NULL) {
    *nbytes = (size_t)(*env)->GetDirectBufferCapacity(env, o);
    return 1;
  }
  size_t es = ofj_element_size(env, o);
  if (es == 0) {
    if (!(*env)->ExceptionCheck(env)) {
      SWIG_JavaThrowException(env, SWIG_JavaIllegalArgumentException,
                              "data: neither a primitive array nor a direct ByteBuffer");
    }
    return 0;
  }
  *nbytes = (size_t)(*env)->GetArrayLength(env, (jarray)o) * es;
  return 1;
}
%}

#define SWIGWORDSIZE64 /* LP64: int64_t is long, as in the C compiler */
%include <stdint.i>
%include <arrays_java.i>
%javaconst(1);
%pragma(java) jniclassimports=%{%}
%pragma(java) jniclasscode=%{
  static {
    org.oneflow.jni.NativeLibrary.load();
  }
%}
/* Options-struct proxies are freed by the Java layer right after the call: no finalize(). */
%typemap(javafinalize) SWIGTYPE ""
%javaconstvalue("Long.MIN_VALUE") OF_DIM_UNKNOWN;

/* 64-bit unsigned values (a seed, statistics) travel as Java long, bit for bit. */
%apply long long { uint64_t, int64_t, long };
%apply long long[ANY] { int64_t[ANY] };

/* ---- handles ------------------------------------------------------------------------------- */
%define OF_HANDLE(T)
%typemap(jni) T*, const T* "jlong"
%typemap(jtype) T*, const T* "long"
%typemap(jstype) T*, const T* "long"
%typemap(javain) T*, const T* "$javainput"
%typemap(javaout) T*, const T* { return $jnicall; }
%typemap(in) T*, const T* %{ $1 = ($1_ltype)(intptr_t)$input; %}
%typemap(out) T*, const T* %{ $result = (jlong)(intptr_t)$1; %}
/* One out handle: a long[] of length >= 1; element 0 receives it. */
%typemap(jni) T**, const T** "jlongArray"
%typemap(jtype) T**, const T** "long[]"
%typemap(jstype) T**, const T** "long[]"
%typemap(javain) T**, const T** "$javainput"
%typemap(in) T** ($*1_ltype temp = NULL), const T** ($*1_ltype temp = NULL) %{
  if ($input == NULL || (*jenv)->GetArrayLength(jenv, $input) < 1) {
    SWIG_JavaThrowException(jenv, SWIG_JavaNullPointerException, "$1_name: needs a long[1]");
    return $null;
  }
  $1 = &temp;
%}
%typemap(argout) T**, const T** %{
  { jlong v = (jlong)(intptr_t)temp$argnum; (*jenv)->SetLongArrayRegion(jenv, $input, 0, 1, &v); }
%}
%enddef

OF_HANDLE(of_status_t)
OF_HANDLE(of_dtype_t)
OF_HANDLE(of_session_t)
OF_HANDLE(of_tensor_t)
OF_HANDLE(of_tensor_list_t)
OF_HANDLE(of_graph_t)
OF_HANDLE(of_optimizer_t)
OF_HANDLE(of_process_group_t)
/* DLPack's managed tensors travel as addresses too (their fields are DLPack's). */
OF_HANDLE(struct DLManagedTensorVersioned)
OF_HANDLE(struct DLManagedTensor)


/* Lists of handles with their count (multi-argument typemaps match by name as well as type). */
%define OF_HANDLE_LIST(LISTTYPE, LISTNAME, COUNTNAME)
%typemap(jni) (LISTTYPE LISTNAME, size_t COUNTNAME) "jlongArray"
%typemap(jtype) (LISTTYPE LISTNAME, size_t COUNTNAME) "long[]"
%typemap(jstype) (LISTTYPE LISTNAME, size_t COUNTNAME) "long[]"
%typemap(javain) (LISTTYPE LISTNAME, size_t COUNTNAME) "$javainput"
%typemap(in) (LISTTYPE LISTNAME, size_t COUNTNAME) (jlong* elems = NULL) %{
  $1 = NULL;
  $2 = 0;
  if ($input != NULL) {
    $2 = (size_t)(*jenv)->GetArrayLength(jenv, $input);
    elems = (*jenv)->GetLongArrayElements(jenv, $input, NULL);
    if (elems == NULL) return $null;
    $1 = ($1_ltype)(void*)elems;
  }
%}
%typemap(argout) (LISTTYPE LISTNAME, size_t COUNTNAME) ""
%typemap(freearg) (LISTTYPE LISTNAME, size_t COUNTNAME) %{
  if (elems$argnum != NULL) (*jenv)->ReleaseLongArrayElements(jenv, $input, elems$argnum, JNI_ABORT);
%}
%enddef
/* The pairs of the functions outside the op section; the ops' own come from the header (op_arrays.i,
 * generated by bindings/gen/emit_java.py next to the op classes). */
OF_HANDLE_LIST(of_tensor_t* const*, params, n)
OF_HANDLE_LIST(of_tensor_t* const*, tensors, n)
OF_HANDLE_LIST(const of_tensor_t* const*, tensors, n)
OF_HANDLE_LIST(const of_tensor_t* const*, inputs, n_inputs)
OF_HANDLE_LIST(const int64_t*, dims, ndim)
%include "op_arrays.i"

/* of_graph_run's outputs: a long[] of exactly n_out_tensors elements, written on success. */
%typemap(jni) (of_tensor_t** out_tensors, size_t n_out_tensors) "jlongArray"
%typemap(jtype) (of_tensor_t** out_tensors, size_t n_out_tensors) "long[]"
%typemap(jstype) (of_tensor_t** out_tensors, size_t n_out_tensors) "long[]"
%typemap(javain) (of_tensor_t** out_tensors, size_t n_out_tensors) "$javainput"
%typemap(in) (of_tensor_t** out_tensors, size_t n_out_tensors) (jlong* elems = NULL) %{
  $1 = NULL;
  $2 = 0;
  if ($input != NULL) {
    $2 = (size_t)(*jenv)->GetArrayLength(jenv, $input);
    elems = (*jenv)->GetLongArrayElements(jenv, $input, NULL);
    if (elems == NULL) return $null;
    for (size_t i = 0; i < $2; ++i) elems[i] = 0;
    $1 = (of_tensor_t**)elems;
  }
%}
%typemap(argout) (of_tensor_t** out_tensors, size_t n_out_tensors) ""
%typemap(freearg) (of_tensor_t** out_tensors, size_t n_out_tensors) %{
  if (elems$argnum != NULL) (*jenv)->ReleaseLongArrayElements(jenv, $input, elems$argnum, 0);
%}

/* ---- flags ----------------------------------------------------------------------------------- */
%typemap(jni) of_bool_t "jboolean"
%typemap(jtype) of_bool_t "boolean"
%typemap(jstype) of_bool_t "boolean"
%typemap(javain) of_bool_t "$javainput"
%typemap(javaout) of_bool_t { return $jnicall; }
%typemap(in) of_bool_t %{ $1 = $input ? 1 : 0; %}
%typemap(out) of_bool_t %{ $result = $1 ? JNI_TRUE : JNI_FALSE; %}

/* ---- one-element out arrays ------------------------------------------------------------------ */
%define OF_OUT(CTYPE, JNIT, JARR, JAVAARR, SETTER)
%typemap(jni) CTYPE* "JARR"
%typemap(jtype) CTYPE* "JAVAARR"
%typemap(jstype) CTYPE* "JAVAARR"
%typemap(javain) CTYPE* "$javainput"
%typemap(in) CTYPE* (CTYPE temp = 0) %{
  if ($input == NULL || (*jenv)->GetArrayLength(jenv, $input) < 1) {
    SWIG_JavaThrowException(jenv, SWIG_JavaNullPointerException, "$1_name: needs an array of length 1");
    return $null;
  }
  $1 = &temp;
%}
%typemap(argout) CTYPE* %{
  { JNIT v = (JNIT)temp$argnum; (*jenv)->SETTER(jenv, $input, 0, 1, &v); }
%}
%enddef
OF_OUT(int64_t, jlong, jlongArray, long[], SetLongArrayRegion)
OF_OUT(size_t, jlong, jlongArray, long[], SetLongArrayRegion)
OF_OUT(int32_t, jint, jintArray, int[], SetIntArrayRegion)
OF_OUT(double, jdouble, jdoubleArray, double[], SetDoubleArrayRegion)
OF_OUT(uint8_t, jint, jintArray, int[], SetIntArrayRegion)
OF_OUT(uint16_t, jint, jintArray, int[], SetIntArrayRegion)
OF_OUT(of_bool_t, jboolean, jbooleanArray, boolean[], SetBooleanArrayRegion)
/* The OF_NULLABLE ones: null passes NULL (that part is not written). */
%typemap(in) int32_t* out_major (int32_t temp = 0), int32_t* out_minor (int32_t temp = 0),
             int32_t* out_patch (int32_t temp = 0), of_bool_t* out_previous (of_bool_t temp = 0) %{
  $1 = ($input != NULL && (*jenv)->GetArrayLength(jenv, $input) >= 1) ? &temp : NULL;
%}
%typemap(argout) int32_t* out_major, int32_t* out_minor, int32_t* out_patch %{
  if ($1 != NULL) { jint v = (jint)temp$argnum; (*jenv)->SetIntArrayRegion(jenv, $input, 0, 1, &v); }
%}
%typemap(argout) of_bool_t* out_previous %{
  if ($1 != NULL) { jboolean v = temp$argnum ? JNI_TRUE : JNI_FALSE; (*jenv)->SetBooleanArrayRegion(jenv, $input, 0, 1, &v); }
%}

/* ---- strings: NUL-terminated UTF-8 both ways ------------------------------------------------- */
%typemap(jni) const char* "jbyteArray"
%typemap(jtype) const char* "byte[]"
%typemap(jstype) const char* "String"
%typemap(javain) const char* "org.oneflow.jni.NativeLibrary.cString($javainput)"
%typemap(in) const char* (jbyte* bytes = NULL) %{
  $1 = NULL;
  if ($input != NULL) {
    bytes = (*jenv)->GetByteArrayElements(jenv, $input, NULL);
    if (bytes == NULL) return $null;
    $1 = ($1_ltype)bytes;
  }
%}
%typemap(freearg) const char* %{
  if (bytes$argnum != NULL) (*jenv)->ReleaseByteArrayElements(jenv, $input, bytes$argnum, JNI_ABORT);
%}
/* Static ASCII results (versions, code and dtype names) stay plain Strings. */
%typemap(out) const char* %{ $result = (jbyteArray)($1 ? (*jenv)->NewStringUTF(jenv, $1) : NULL); %}
%typemap(jni) const char* of_version_string, const char* of_status_code_name, const char* of_dtype_name "jstring"
%typemap(jtype) const char* of_version_string, const char* of_status_code_name, const char* of_dtype_name "String"
%typemap(out) const char* of_version_string, const char* of_status_code_name, const char* of_dtype_name
  %{ $result = $1 ? (*jenv)->NewStringUTF(jenv, $1) : NULL; %}
%typemap(javaout) const char* { return $jnicall; }
/* The status message: UTF-8 bytes (it may hold characters JNI's modified UTF-8 cannot carry). */
%typemap(jni) const char* of_status_message "jbyteArray"
%typemap(jtype) const char* of_status_message "byte[]"
%typemap(jstype) const char* of_status_message "byte[]"
%typemap(out) const char* of_status_message %{
  {
    size_t n = $1 ? strlen($1) : 0;
    $result = (*jenv)->NewByteArray(jenv, (jsize)n);
    if ($result != NULL && n > 0) (*jenv)->SetByteArrayRegion(jenv, $result, 0, (jsize)n, (const jbyte*)$1);
  }
%}
/* A borrowed out name: byte[][1], element 0 receives the UTF-8 bytes. */
%typemap(jni) const char** "jobjectArray"
%typemap(jtype) const char** "byte[][]"
%typemap(jstype) const char** "byte[][]"
%typemap(javain) const char** "$javainput"
%typemap(in) const char** ($*1_ltype temp = NULL) %{
  if ($input == NULL || (*jenv)->GetArrayLength(jenv, $input) < 1) {
    SWIG_JavaThrowException(jenv, SWIG_JavaNullPointerException, "$1_name: needs a byte[1][]");
    return $null;
  }
  $1 = &temp;
%}
%typemap(argout) const char** %{
  if (temp$argnum != NULL) {
    size_t n = strlen(temp$argnum);
    jbyteArray b = (*jenv)->NewByteArray(jenv, (jsize)n);
    if (b == NULL) return $null;
    if (n > 0) (*jenv)->SetByteArrayRegion(jenv, b, 0, (jsize)n, (const jbyte*)temp$argnum);
    (*jenv)->SetObjectArrayElement(jenv, $input, 0, b);
    (*jenv)->DeleteLocalRef(jenv, b);
  }
%}
/* A list of names: String[] (each NUL-terminated UTF-8 from Java); the Java layer passes as many
 * names as tensors. */
%typemap(jni) const char* const* "jobjectArray"
%typemap(jtype) const char* const* "byte[][]"
%typemap(jstype) const char* const* "String[]"
%typemap(javain) const char* const* "org.oneflow.jni.NativeLibrary.cStrings($javainput)"
%typemap(in) const char* const* (char** names = NULL, jsize count = 0) %{
  $1 = NULL;
  if ($input != NULL) {
    jsize total = (*jenv)->GetArrayLength(jenv, $input);
    char** buf = (char**)calloc((size_t)total + 1, sizeof(char*));
    if (buf == NULL) { SWIG_JavaThrowException(jenv, SWIG_JavaOutOfMemoryError, "names"); return $null; }
    names = buf;
    count = total;
    for (jsize i = 0; i < total; ++i) {
      jbyteArray b = (jbyteArray)(*jenv)->GetObjectArrayElement(jenv, $input, i);
      jsize n = b ? (*jenv)->GetArrayLength(jenv, b) : 0;
      buf[i] = (char*)calloc((size_t)n + 1, 1);
      if (buf[i] == NULL) { SWIG_JavaThrowException(jenv, SWIG_JavaOutOfMemoryError, "names"); return $null; }
      if (b != NULL) {
        (*jenv)->GetByteArrayRegion(jenv, b, 0, n, (jbyte*)buf[i]);
        (*jenv)->DeleteLocalRef(jenv, b);
      }
    }
    $1 = ($1_ltype)(void*)buf;
  }
%}
%typemap(freearg) const char* const* %{
  if (names$argnum != NULL) {
    for (jsize i = 0; i < count$argnum; ++i) free(names$argnum[i]);
    free(names$argnum);
  }
%}

/* ---- dims and sizes ------------------------------------------------------------------------ */
/* of_tensor_dims: a long[] whose length is the capacity, written on success. */
%typemap(jni) (int64_t* out_dims, size_t capacity) "jlongArray"
%typemap(jtype) (int64_t* out_dims, size_t capacity) "long[]"
%typemap(jstype) (int64_t* out_dims, size_t capacity) "long[]"
%typemap(javain) (int64_t* out_dims, size_t capacity) "$javainput"
%typemap(in) (int64_t* out_dims, size_t capacity) (jlong* elems = NULL) %{
  $1 = NULL;
  $2 = 0;
  if ($input != NULL) {
    $2 = (size_t)(*jenv)->GetArrayLength(jenv, $input);
    elems = (*jenv)->GetLongArrayElements(jenv, $input, NULL);
    if (elems == NULL) return $null;
    $1 = (int64_t*)elems;
  }
%}
%typemap(argout) (int64_t* out_dims, size_t capacity) ""
%typemap(freearg) (int64_t* out_dims, size_t capacity) %{
  if (elems$argnum != NULL) (*jenv)->ReleaseLongArrayElements(jenv, $input, elems$argnum, 0);
%}
/* of_graph_dump: a byte[] (or null with capacity 0). */
%typemap(jni) (char* out_buffer, size_t capacity) "jbyteArray"
%typemap(jtype) (char* out_buffer, size_t capacity) "byte[]"
%typemap(jstype) (char* out_buffer, size_t capacity) "byte[]"
%typemap(javain) (char* out_buffer, size_t capacity) "$javainput"
%typemap(in) (char* out_buffer, size_t capacity) (jbyte* elems = NULL) %{
  $1 = NULL;
  $2 = 0;
  if ($input != NULL) {
    $2 = (size_t)(*jenv)->GetArrayLength(jenv, $input);
    elems = (*jenv)->GetByteArrayElements(jenv, $input, NULL);
    if (elems == NULL) return $null;
    $1 = (char*)elems;
  }
%}
%typemap(argout) (char* out_buffer, size_t capacity) ""
%typemap(freearg) (char* out_buffer, size_t capacity) %{
  if (elems$argnum != NULL) (*jenv)->ReleaseByteArrayElements(jenv, $input, elems$argnum, 0);
%}

/* ---- element data -------------------------------------------------------------------------- */
/* Copy in: a primitive array (copied out of the Java heap first, so that no JNI critical region
 * spans the call) or a direct buffer (read in place). */
%typemap(jni) (const void* data, size_t nbytes) "jobject"
%typemap(jtype) (const void* data, size_t nbytes) "Object"
%typemap(jstype) (const void* data, size_t nbytes) "Object"
%typemap(javain) (const void* data, size_t nbytes) "$javainput"
%typemap(in) (const void* data, size_t nbytes) (void* copy = NULL) %{
  $1 = NULL;
  $2 = 0;
  if ($input != NULL) {
    void* direct = NULL;
    if (!ofj_bytes_of(jenv, $input, &direct, &$2)) return $null;
    if (direct != NULL) {
      $1 = direct;
    } else {
      copy = malloc($2 > 0 ? $2 : 1);
      if (copy == NULL) { SWIG_JavaThrowException(jenv, SWIG_JavaOutOfMemoryError, "data"); return $null; }
      void* elems = (*jenv)->GetPrimitiveArrayCritical(jenv, (jarray)$input, NULL);
      if (elems == NULL) { free(copy); return $null; }
      memcpy(copy, elems, $2);
      (*jenv)->ReleasePrimitiveArrayCritical(jenv, (jarray)$input, elems, JNI_ABORT);
      $1 = copy;
    }
  }
%}
%typemap(freearg) (const void* data, size_t nbytes) %{ free(copy$argnum); %}
/* Copy out: into a primitive array (through a buffer, copied in after a successful call) or a
 * direct buffer (written in place). */
%typemap(jni) (void* out_data, size_t nbytes) "jobject"
%typemap(jtype) (void* out_data, size_t nbytes) "Object"
%typemap(jstype) (void* out_data, size_t nbytes) "Object"
%typemap(javain) (void* out_data, size_t nbytes) "$javainput"
%typemap(in) (void* out_data, size_t nbytes) (void* copy = NULL) %{
  $1 = NULL;
  $2 = 0;
  if ($input != NULL) {
    void* direct = NULL;
    if (!ofj_bytes_of(jenv, $input, &direct, &$2)) return $null;
    if (direct != NULL) {
      $1 = direct;
    } else {
      copy = malloc($2 > 0 ? $2 : 1);
      if (copy == NULL) { SWIG_JavaThrowException(jenv, SWIG_JavaOutOfMemoryError, "out_data"); return $null; }
      $1 = copy;
    }
  }
%}
%typemap(argout) (void* out_data, size_t nbytes) %{
  if (result == NULL && copy$argnum != NULL && $2 > 0) {
    void* elems = (*jenv)->GetPrimitiveArrayCritical(jenv, (jarray)$input, NULL);
    if (elems != NULL) {
      memcpy(elems, copy$argnum, $2);
      (*jenv)->ReleasePrimitiveArrayCritical(jenv, (jarray)$input, elems, 0);
    }
  }
%}
%typemap(freearg) (void* out_data, size_t nbytes) %{ free(copy$argnum); %}
/* Adopt: a direct ByteBuffer kept reachable by a global reference until the deleter runs. */
%typemap(jni) (void* data, size_t nbytes, of_deleter_fn deleter, void* user_data) "jobject"
%typemap(jtype) (void* data, size_t nbytes, of_deleter_fn deleter, void* user_data) "java.nio.ByteBuffer"
%typemap(jstype) (void* data, size_t nbytes, of_deleter_fn deleter, void* user_data) "java.nio.ByteBuffer"
%typemap(javain) (void* data, size_t nbytes, of_deleter_fn deleter, void* user_data) "$javainput"
%typemap(in) (void* data, size_t nbytes, of_deleter_fn deleter, void* user_data) %{
  $1 = NULL;
  $2 = 0;
  $3 = NULL;
  $4 = NULL;
  if ($input != NULL) {
    $1 = (*jenv)->GetDirectBufferAddress(jenv, $input);
    if ($1 == NULL) {
      SWIG_JavaThrowException(jenv, SWIG_JavaIllegalArgumentException, "data: not a direct ByteBuffer");
      return $null;
    }
    $2 = (size_t)(*jenv)->GetDirectBufferCapacity(jenv, $input);
    if (ofj_vm == NULL) (*jenv)->GetJavaVM(jenv, &ofj_vm);
    $4 = (void*)(*jenv)->NewGlobalRef(jenv, $input);
    if ($4 == NULL) { SWIG_JavaThrowException(jenv, SWIG_JavaOutOfMemoryError, "data"); return $null; }
    $3 = ofj_release_buffer;
    __atomic_add_fetch(&ofj_adopted_buffers, 1, __ATOMIC_SEQ_CST);
  }
%}

/* ---- string fields of options structs ------------------------------------------------------- */
/* Set from a String (NUL-terminated UTF-8, as every const char* argument): the proxy keeps its own copy,
 * freed when the field is set again and by the proxy's destructor, so the C struct never points into a
 * Java array that has been released (SWIG's own const char* setter copies and never frees: warning
 * 451). Read as a String (null for NULL). options_strings.i, generated from the header, applies it to
 * every string field of the options structs and gives each struct that has one its destructor. */
%define OF_STRING_FIELD(NAME)
%typemap(memberin) const char* NAME %{
  free((char*)$1);
  $1 = NULL;
  if ($input != NULL) {
    size_t n = strlen($input) + 1;
    char* copy = (char*)malloc(n);
    if (copy != NULL) memcpy(copy, $input, n); /* NULL (out of memory): the library refuses the options */
    $1 = copy;
  }
%}
%typemap(out) const char* NAME %{
  $result = NULL;
  if ($1 != NULL) {
    size_t n = strlen($1);
    $result = (*jenv)->NewByteArray(jenv, (jsize)n);
    if ($result != NULL && n > 0) (*jenv)->SetByteArrayRegion(jenv, $result, 0, (jsize)n, (const jbyte*)$1);
  }
%}
%typemap(javaout) const char* NAME {
    final byte[] utf8 = $jnicall;
    return utf8 == null ? null : new String(utf8, java.nio.charset.StandardCharsets.UTF_8);
  }
%enddef
%include "options_strings.i"

/* The memory statistics' struct_size is set by the constructor, which knows the size. */
%extend of_graph_memory_stats_t {
  of_graph_memory_stats_t() {
    of_graph_memory_stats_t* s = (of_graph_memory_stats_t*)calloc(1, sizeof(of_graph_memory_stats_t));
    if (s != NULL) s->struct_size = sizeof(of_graph_memory_stats_t);
    return s;
  }
}

%extend of_device_memory_stats_t {
  of_device_memory_stats_t() {
    of_device_memory_stats_t* s = (of_device_memory_stats_t*)calloc(1, sizeof(of_device_memory_stats_t));
    if (s != NULL) s->struct_size = sizeof(of_device_memory_stats_t);
    return s;
  }
}

%include "oneflow/oneflow_c.h"

/* Counters of adopted direct buffers (tests observe the library's deleters through them). */
%inline %{
long long ofj_adopted_buffer_count(void) { return __atomic_load_n(&ofj_adopted_buffers, __ATOMIC_SEQ_CST); }
long long ofj_released_buffer_count(void) { return __atomic_load_n(&ofj_released_buffers, __ATOMIC_SEQ_CST); }
%}
