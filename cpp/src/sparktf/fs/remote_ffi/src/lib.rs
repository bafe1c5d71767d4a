//! C ABI over hdfs-native (hdfs://) and object_store (s3://) for sparktf's FileSystem
//! seam. The contract of every function is in ../remote_ffi.h; this file only adapts.
//!
//! Every call blocks the calling thread on a process-wide Tokio runtime and is bounded
//! by the filesystem's timeout. Errors come back as a sparktf StatusCode number plus a
//! message that the caller frees with stf_string_free. Panics are caught at the
//! boundary and become kInternal. After fork() the child builds a runtime of its own:
//! handles made before the fork must not be used in the child (the C++ side keys its
//! cache by pid).

use std::ffi::{c_char, CStr, CString};
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::buffered::BufWriter;
use object_store::path::Path as ObjPath;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt};
use tokio::io::AsyncWriteExt;
use tokio::runtime::Runtime;
use tokio::sync::mpsc;

// StatusCode values of sparktf/common/status.h.
const OK: i32 = 0;
const INVALID_ARGUMENT: i32 = 1;
const NOT_FOUND: i32 = 2;
const DATA_LOSS: i32 = 3;
const OUT_OF_RANGE: i32 = 4;
const IO_ERROR: i32 = 5;
const DEADLINE_EXCEEDED: i32 = 6;
const UNAVAILABLE: i32 = 7;
const UNAUTHENTICATED: i32 = 8;
const INTERNAL: i32 = 12;
const UNIMPLEMENTED: i32 = 13;
const PERMISSION_DENIED: i32 = 14;
const ALREADY_EXISTS: i32 = 15;

struct Error {
    code: i32,
    message: String,
}

impl Error {
    fn new(code: i32, message: impl Into<String>) -> Self {
        Error { code, message: message.into() }
    }
}

type Res<T> = Result<T, Error>;

// ---- runtime -------------------------------------------------------------------------

struct ProcessRuntime {
    pid: u32,
    runtime: &'static Runtime,
}

static RUNTIME: Mutex<Option<ProcessRuntime>> = Mutex::new(None);

/// The runtime of this process. A runtime inherited through fork() has no threads, so
/// the child leaks it and builds its own.
fn runtime() -> &'static Runtime {
    let pid = std::process::id();
    let mut guard = RUNTIME.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(rt) = guard.as_ref() {
        if rt.pid == pid {
            return rt.runtime;
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("sparktf-fs")
        .enable_all()
        .build()
        .expect("tokio runtime");
    let rt: &'static Runtime = Box::leak(Box::new(rt));
    *guard = Some(ProcessRuntime { pid, runtime: rt });
    rt
}

fn block_on_timeout<F: Future>(timeout: Duration, what: &str, fut: F) -> Res<F::Output> {
    runtime().block_on(async move {
        tokio::time::timeout(timeout, fut).await.map_err(|_| {
            Error::new(
                DEADLINE_EXCEEDED,
                format!("{what}: no answer within {:.1} s", timeout.as_secs_f64()),
            )
        })
    })
}

// ---- error mapping --------------------------------------------------------------------

fn io_kind_code(kind: std::io::ErrorKind) -> i32 {
    use std::io::ErrorKind::*;
    match kind {
        NotFound => NOT_FOUND,
        PermissionDenied => PERMISSION_DENIED,
        ConnectionRefused | ConnectionReset | ConnectionAborted | NotConnected
        | AddrNotAvailable | BrokenPipe | UnexpectedEof | HostUnreachable
        | NetworkUnreachable => UNAVAILABLE,
        TimedOut => DEADLINE_EXCEEDED,
        AlreadyExists => ALREADY_EXISTS,
        _ => IO_ERROR,
    }
}

fn hdfs_error(e: hdfs_native::HdfsError) -> Error {
    use hdfs_native::HdfsError as H;
    let code = match &e {
        H::IOError(io) => io_kind_code(io.kind()),
        H::FileNotFound(_) => NOT_FOUND,
        H::AlreadyExists(_) => ALREADY_EXISTS,
        H::InvalidPath(_) | H::InvalidArgument(_) | H::UrlParseError(_)
        | H::IsADirectoryError(_) => INVALID_ARGUMENT,
        H::ChecksumError => DATA_LOSS,
        H::UnsupportedFeature(_) | H::UnsupportedErasureCodingPolicy(_) => UNIMPLEMENTED,
        H::SASLError(_) | H::GSSAPIError(..) | H::NoSASLMechanism => UNAUTHENTICATED,
        H::RPCError(class, _) | H::FatalRPCError(class, _) => {
            if class.ends_with("AccessControlException") {
                PERMISSION_DENIED
            } else if class.ends_with("FileNotFoundException") {
                NOT_FOUND
            } else if class.ends_with("FileAlreadyExistsException") {
                ALREADY_EXISTS
            } else if class.ends_with("ParentNotDirectoryException")
                || class.ends_with("PathIsNotEmptyDirectoryException")
                || class.ends_with("InvalidPathException")
            {
                INVALID_ARGUMENT
            } else if class.ends_with("StandbyException")
                || class.ends_with("SafeModeException")
                || class.ends_with("RetriableException")
            {
                UNAVAILABLE
            } else {
                IO_ERROR
            }
        }
        _ => IO_ERROR,
    };
    let message = match &e {
        // "RPC error: java.io.FileNotFoundException File does not exist: /x" reads badly;
        // keep the remote message and name the class once.
        H::RPCError(class, msg) | H::FatalRPCError(class, msg) => {
            let short = class.rsplit('.').next().unwrap_or(class);
            let first = msg.lines().next().unwrap_or(msg);
            format!("{short}: {first}")
        }
        other => other.to_string(),
    };
    Error::new(code, message)
}

fn s3_error(e: object_store::Error) -> Error {
    use object_store::Error as E;
    let code = match &e {
        E::NotFound { .. } => NOT_FOUND,
        E::AlreadyExists { .. } => ALREADY_EXISTS,
        E::InvalidPath { .. } => INVALID_ARGUMENT,
        E::NotSupported { .. } | E::NotImplemented { .. } => UNIMPLEMENTED,
        E::PermissionDenied { .. } => PERMISSION_DENIED,
        E::Unauthenticated { .. } => UNAUTHENTICATED,
        E::Precondition { .. } => ALREADY_EXISTS,
        _ => {
            // object_store folds HTTP statuses it has no variant for into Generic; the
            // text still says what S3 answered.
            let text = e.to_string();
            if text.contains("NoSuchBucket") {
                NOT_FOUND
            } else if text.contains("InvalidAccessKeyId")
                || text.contains("SignatureDoesNotMatch")
                || text.contains("403 Forbidden")
            {
                UNAUTHENTICATED
            } else if text.contains("AccessDenied") {
                PERMISSION_DENIED
            } else if text.contains("Connection refused")
                || text.contains("error sending request")
                || text.contains("dns error")
            {
                UNAVAILABLE
            } else {
                IO_ERROR
            }
        }
    };
    Error::new(code, flatten_error(&e))
}

/// The error's message with its sources, which is where object_store and reqwest say
/// what actually happened ("connection refused", the S3 error code).
fn flatten_error(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

// ---- C boundary helpers ---------------------------------------------------------------

fn set_error(err: *mut *mut c_char, e: &Error) -> i32 {
    if !err.is_null() {
        let msg = CString::new(e.message.replace('\0', " ")).unwrap_or_default();
        unsafe { *err = msg.into_raw() };
    }
    e.code
}

/// Runs `f`, turning an Err or a panic into a status code and message.
fn ffi<F: FnOnce() -> Res<()>>(err: *mut *mut c_char, f: F) -> i32 {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => OK,
        Ok(Err(e)) => set_error(err, &e),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            set_error(err, &Error::new(INTERNAL, format!("remote filesystem panicked: {what}")))
        }
    }
}

fn cstr<'a>(p: *const c_char, what: &str) -> Res<&'a str> {
    if p.is_null() {
        return Err(Error::new(INVALID_ARGUMENT, format!("{what} is null")));
    }
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| Error::new(INVALID_ARGUMENT, format!("{what} is not UTF-8")))
}

fn config_pairs(keys: *const *const c_char, values: *const *const c_char, n: usize)
    -> Res<Vec<(String, String)>> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let k = cstr(unsafe { *keys.add(i) }, "config key")?;
        let v = cstr(unsafe { *values.add(i) }, "config value")?;
        out.push((k.to_string(), v.to_string()));
    }
    Ok(out)
}

#[no_mangle]
pub extern "C" fn stf_string_free(s: *mut c_char) {
    if !s.is_null() {
        drop(unsafe { CString::from_raw(s) });
    }
}

// ---- filesystems ----------------------------------------------------------------------

#[derive(Clone)]
enum Backend {
    Hdfs(Arc<hdfs_native::Client>),
    S3(Arc<AmazonS3>),
}

pub struct StfFs {
    backend: Backend,
    timeout: Duration,
}

#[repr(C)]
pub struct StfFileInfo {
    pub size: i64,
    pub mtime_ms: i64,
    pub is_dir: u8,
}

/// Opens the HDFS named by `url` ("hdfs://host:port", "hdfs://nameservice" or "hdfs://"
/// for fs.defaultFS), reading HADOOP_CONF_DIR; `keys`/`values` override configuration.
#[no_mangle]
pub extern "C" fn stf_hdfs_open(url: *const c_char, keys: *const *const c_char,
                                values: *const *const c_char, n: usize, timeout_ms: u64,
                                out: *mut *mut StfFs, err: *mut *mut c_char) -> i32 {
    ffi(err, || {
        let url = cstr(url, "url")?;
        let mut config = config_pairs(keys, values, n)?;
        config.extend(single_namenode_failover_defaults(url));
        let timeout = Duration::from_millis(timeout_ms.max(1));
        let handle = runtime().handle().clone();
        let client = {
            let _guard = handle.enter();
            hdfs_native::ClientBuilder::new()
                .with_url(url)
                .with_config(config)
                .with_io_runtime(handle.clone())
                .build()
                .map_err(hdfs_error)?
        };
        let fs = StfFs { backend: Backend::Hdfs(Arc::new(client)), timeout };
        unsafe { *out = Box::into_raw(Box::new(fs)) };
        Ok(())
    })
}

/// Opens bucket `bucket` of S3 (or an S3-compatible store). Configuration comes from
/// `keys`/`values` (object_store's AmazonS3ConfigKey names, e.g. "aws_endpoint",
/// "aws_access_key_id", "aws_allow_http"); the C++ side fills them from the environment
/// and the shared credentials/config files.
#[no_mangle]
pub extern "C" fn stf_s3_open(bucket: *const c_char, keys: *const *const c_char,
                              values: *const *const c_char, n: usize, timeout_ms: u64,
                              out: *mut *mut StfFs, err: *mut *mut c_char) -> i32 {
    ffi(err, || {
        let bucket = cstr(bucket, "bucket")?;
        let config = config_pairs(keys, values, n)?;
        let timeout = Duration::from_millis(timeout_ms.max(1));
        let mut builder = AmazonS3Builder::new().with_bucket_name(bucket);
        let mut options = object_store::ClientOptions::new()
            .with_connect_timeout(timeout.min(Duration::from_secs(10)))
            .with_timeout(timeout);
        for (k, v) in config {
            if k == "aws_allow_http" {
                options = options.with_allow_http(v == "true");
                continue;
            }
            let key = k.parse().map_err(|_| {
                Error::new(INVALID_ARGUMENT, format!("unknown S3 configuration key {k}"))
            })?;
            builder = builder.with_config(key, v);
        }
        // Retries back off for up to the timeout, not object_store's default 3 minutes.
        let retry = object_store::RetryConfig {
            max_retries: 3,
            retry_timeout: timeout,
            backoff: object_store::BackoffConfig {
                init_backoff: Duration::from_millis(100),
                max_backoff: Duration::from_secs(2),
                base: 2.0,
            },
        };
        let store = builder
            .with_client_options(options)
            .with_retry(retry)
            .build()
            .map_err(s3_error)?;
        let fs = StfFs { backend: Backend::S3(Arc::new(store)), timeout };
        unsafe { *out = Box::into_raw(Box::new(fs)) };
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn stf_fs_free(fs: *mut StfFs) {
    if !fs.is_null() {
        drop(unsafe { Box::from_raw(fs) });
    }
}

fn fs_ref<'a>(fs: *mut StfFs) -> Res<&'a StfFs> {
    if fs.is_null() {
        return Err(Error::new(INVALID_ARGUMENT, "filesystem handle is null"));
    }
    Ok(unsafe { &*fs })
}

fn obj_path(path: &str) -> Res<ObjPath> {
    ObjPath::parse(path.trim_start_matches('/'))
        .map_err(|e| Error::new(INVALID_ARGUMENT, format!("invalid object key {path}: {e}")))
}

fn millis(dt: chrono::DateTime<chrono::Utc>) -> i64 {
    dt.timestamp_millis()
}

async fn s3_stat(store: &AmazonS3, path: &str) -> Res<StfFileInfo> {
    let key = obj_path(path)?;
    if !key.as_ref().is_empty() {
        match store.head(&key).await {
            Ok(meta) => {
                return Ok(StfFileInfo {
                    size: meta.size as i64,
                    mtime_ms: millis(meta.last_modified),
                    is_dir: 0,
                })
            }
            Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(s3_error(e)),
        }
    }
    // A "directory" exists when some key lies below it (or it is the bucket itself).
    let prefix = if key.as_ref().is_empty() { None } else { Some(&key) };
    let mut listing = store.list(prefix);
    match listing.next().await {
        Some(Ok(_)) => Ok(StfFileInfo { size: 0, mtime_ms: 0, is_dir: 1 }),
        Some(Err(e)) => Err(s3_error(e)),
        None if prefix.is_none() => Ok(StfFileInfo { size: 0, mtime_ms: 0, is_dir: 1 }),
        None => Err(Error::new(NOT_FOUND, format!("no such key or prefix: {path}"))),
    }
}

/// Stats `path` (an absolute path inside the filesystem).
#[no_mangle]
pub extern "C" fn stf_fs_stat(fs: *mut StfFs, path: *const c_char, info: *mut StfFileInfo,
                              err: *mut *mut c_char) -> i32 {
    ffi(err, || {
        let fs = fs_ref(fs)?;
        let path = cstr(path, "path")?;
        let result = match &fs.backend {
            Backend::Hdfs(c) => {
                let st = block_on_timeout(fs.timeout, "stat", c.get_file_info(path))?
                    .map_err(hdfs_error)?;
                StfFileInfo {
                    size: st.length as i64,
                    mtime_ms: st.modification_time as i64,
                    is_dir: st.isdir as u8,
                }
            }
            Backend::S3(s) => block_on_timeout(fs.timeout, "stat", s3_stat(s, path))??,
        };
        unsafe { *info = result };
        Ok(())
    })
}

pub struct StfListing {
    entries: Vec<(CString, StfFileInfo)>,
}

/// Lists the direct children of directory `path`: names relative to it.
#[no_mangle]
pub extern "C" fn stf_fs_list(fs: *mut StfFs, path: *const c_char, out: *mut *mut StfListing,
                              err: *mut *mut c_char) -> i32 {
    ffi(err, || {
        let fs = fs_ref(fs)?;
        let path = cstr(path, "path")?;
        let mut entries = Vec::new();
        match &fs.backend {
            Backend::Hdfs(c) => {
                let list = block_on_timeout(fs.timeout, "list", c.list_status(path, false))?
                    .map_err(hdfs_error)?;
                for st in list {
                    let name = st.path.rsplit('/').next().unwrap_or(&st.path).to_string();
                    entries.push((name, StfFileInfo {
                        size: st.length as i64,
                        mtime_ms: st.modification_time as i64,
                        is_dir: st.isdir as u8,
                    }));
                }
            }
            Backend::S3(s) => {
                let key = obj_path(path)?;
                let prefix = if key.as_ref().is_empty() { None } else { Some(&key) };
                let result = block_on_timeout(fs.timeout, "list",
                                              s.list_with_delimiter(prefix))?
                    .map_err(s3_error)?;
                for p in result.common_prefixes {
                    let name = p.filename().unwrap_or_default().to_string();
                    entries.push((name, StfFileInfo { size: 0, mtime_ms: 0, is_dir: 1 }));
                }
                for m in result.objects {
                    let name = m.location.filename().unwrap_or_default().to_string();
                    entries.push((name, StfFileInfo {
                        size: m.size as i64,
                        mtime_ms: millis(m.last_modified),
                        is_dir: 0,
                    }));
                }
                if entries.is_empty() && prefix.is_some() {
                    // An empty listing of a key that is a file, or of nothing at all.
                    let st = block_on_timeout(fs.timeout, "stat", s3_stat(s, path))??;
                    if st.is_dir == 0 {
                        return Err(Error::new(INVALID_ARGUMENT,
                                              format!("not a directory: {path}")));
                    }
                }
            }
        }
        let entries = entries
            .into_iter()
            .map(|(n, i)| (CString::new(n).unwrap_or_default(), i))
            .collect();
        unsafe { *out = Box::into_raw(Box::new(StfListing { entries })) };
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn stf_listing_size(l: *const StfListing) -> usize {
    if l.is_null() { 0 } else { unsafe { (*l).entries.len() } }
}

/// Entry i of a listing; the name stays valid until stf_listing_free.
#[no_mangle]
pub extern "C" fn stf_listing_entry(l: *const StfListing, i: usize, info: *mut StfFileInfo)
    -> *const c_char {
    let l = unsafe { &*l };
    let (name, st) = &l.entries[i];
    unsafe {
        *info = StfFileInfo { size: st.size, mtime_ms: st.mtime_ms, is_dir: st.is_dir };
    }
    name.as_ptr()
}

#[no_mangle]
pub extern "C" fn stf_listing_free(l: *mut StfListing) {
    if !l.is_null() {
        drop(unsafe { Box::from_raw(l) });
    }
}

/// Creates `path` and missing parents (S3 has no directories: nothing to do).
#[no_mangle]
pub extern "C" fn stf_fs_mkdirs(fs: *mut StfFs, path: *const c_char, err: *mut *mut c_char)
    -> i32 {
    ffi(err, || {
        let fs = fs_ref(fs)?;
        let path = cstr(path, "path")?;
        match &fs.backend {
            Backend::Hdfs(c) => block_on_timeout(fs.timeout, "mkdirs", c.mkdirs(path, 0o755, true))?
                .map_err(hdfs_error),
            Backend::S3(_) => Ok(()),
        }
    })
}

/// Deletes a file, or a directory with everything below it when `recursive`.
#[no_mangle]
pub extern "C" fn stf_fs_delete(fs: *mut StfFs, path: *const c_char, recursive: u8,
                                err: *mut *mut c_char) -> i32 {
    ffi(err, || {
        let fs = fs_ref(fs)?;
        let path = cstr(path, "path")?;
        match &fs.backend {
            Backend::Hdfs(c) => {
                let deleted = block_on_timeout(fs.timeout, "delete",
                                               c.delete(path, recursive != 0))?
                    .map_err(hdfs_error)?;
                if deleted { Ok(()) } else {
                    Err(Error::new(NOT_FOUND, format!("no such file or directory: {path}")))
                }
            }
            Backend::S3(s) => {
                let key = obj_path(path)?;
                block_on_timeout(fs.timeout, "delete", async {
                    match s.head(&key).await {
                        Ok(_) => return s.delete(&key).await.map_err(s3_error),
                        Err(object_store::Error::NotFound { .. }) => {}
                        Err(e) => return Err(s3_error(e)),
                    }
                    if recursive == 0 {
                        return Err(Error::new(NOT_FOUND, format!("no such key: {path}")));
                    }
                    let keys: Vec<ObjPath> = s
                        .list(Some(&key))
                        .map_ok(|m| m.location)
                        .try_collect()
                        .await
                        .map_err(s3_error)?;
                    if keys.is_empty() {
                        return Err(Error::new(NOT_FOUND, format!("no such key or prefix: {path}")));
                    }
                    let stream = futures::stream::iter(keys.into_iter().map(Ok)).boxed();
                    let results: Vec<_> = s.delete_stream(stream).collect().await;
                    for r in results {
                        r.map_err(s3_error)?;
                    }
                    Ok(())
                })?
            }
        }
    })
}

/// Renames a file, replacing `dst` when `overwrite` (else ALREADY_EXISTS). HDFS renames
/// atomically; S3 copies and deletes (not atomic).
#[no_mangle]
pub extern "C" fn stf_fs_rename(fs: *mut StfFs, src: *const c_char, dst: *const c_char,
                                overwrite: u8, err: *mut *mut c_char) -> i32 {
    ffi(err, || {
        let fs = fs_ref(fs)?;
        let src = cstr(src, "source")?;
        let dst = cstr(dst, "destination")?;
        match &fs.backend {
            Backend::Hdfs(c) => block_on_timeout(fs.timeout, "rename",
                                                 c.rename(src, dst, overwrite != 0))?
                .map_err(hdfs_error),
            Backend::S3(s) => {
                let (from, to) = (obj_path(src)?, obj_path(dst)?);
                block_on_timeout(fs.timeout, "rename", async {
                    if overwrite == 0 {
                        match s.head(&to).await {
                            Ok(_) => {
                                return Err(Error::new(ALREADY_EXISTS,
                                                      format!("destination exists: {dst}")))
                            }
                            Err(object_store::Error::NotFound { .. }) => {}
                            Err(e) => return Err(s3_error(e)),
                        }
                    }
                    s.copy(&from, &to).await.map_err(s3_error)?;
                    s.delete(&from).await.map_err(s3_error)
                })?
            }
        }
    })
}

// ---- readers --------------------------------------------------------------------------

/// Chunks of one sequential read, fetched ahead by a task on the runtime.
struct Prefetch {
    rx: mpsc::Receiver<Result<Bytes, Error>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Prefetch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

enum ReaderBackend {
    Hdfs(Arc<hdfs_native::file::FileReader>),
    S3(Arc<AmazonS3>, ObjPath),
}

pub struct StfReader {
    backend: ReaderBackend,
    // To look again at an HDFS file that is still being written (see grow()).
    source: Option<(Arc<hdfs_native::Client>, String)>,
    size: u64,
    pos: u64,
    timeout: Duration,
    chunk: Bytes,
    prefetch: Option<Prefetch>,
    readahead_chunks: usize,
}

/// Opens `path` for reading; `*size` receives its length.
#[no_mangle]
pub extern "C" fn stf_reader_open(fs: *mut StfFs, path: *const c_char, out: *mut *mut StfReader,
                                  size: *mut u64, err: *mut *mut c_char) -> i32 {
    ffi(err, || {
        let fs = fs_ref(fs)?;
        let path = cstr(path, "path")?;
        let mut source = None;
        let (backend, len) = match &fs.backend {
            Backend::Hdfs(c) => {
                source = Some((Arc::clone(c), path.to_string()));
                let st = block_on_timeout(fs.timeout, "stat", c.get_file_info(path))?
                    .map_err(hdfs_error)?;
                if st.isdir {
                    return Err(Error::new(INVALID_ARGUMENT, format!("is a directory: {path}")));
                }
                let r = block_on_timeout(fs.timeout, "open", c.read(path))?.map_err(hdfs_error)?;
                let len = r.file_length() as u64;
                (ReaderBackend::Hdfs(Arc::new(r)), len)
            }
            Backend::S3(s) => {
                let key = obj_path(path)?;
                let meta = block_on_timeout(fs.timeout, "stat", s.head(&key))?.map_err(|e| {
                    s3_error(e)
                })?;
                (ReaderBackend::S3(Arc::clone(s), key), meta.size as u64)
            }
        };
        let reader = StfReader {
            backend,
            source,
            size: len,
            pos: 0,
            timeout: fs.timeout,
            chunk: Bytes::new(),
            prefetch: None,
            readahead_chunks: 16,
        };
        unsafe {
            *size = len;
            *out = Box::into_raw(Box::new(reader));
        }
        Ok(())
    })
}

fn range_stream(backend: &ReaderBackend, offset: u64, end: u64)
    -> BoxStream<'static, Result<Bytes, Error>> {
    match backend {
        ReaderBackend::Hdfs(r) => r
            .read_range_stream(offset as usize, (end - offset) as usize)
            .map_err(hdfs_error)
            .boxed(),
        ReaderBackend::S3(s, key) => {
            let (s, key) = (Arc::clone(s), key.clone());
            futures::stream::once(async move {
                let opts = GetOptions {
                    range: Some(GetRange::Bounded(offset..end)),
                    ..Default::default()
                };
                s.get_opts(&key, opts).await.map_err(s3_error)
            })
            .map_ok(|r| r.into_stream().map_err(s3_error))
            .try_flatten()
            .boxed()
        }
    }
}

impl StfReader {
    fn start_prefetch(&mut self) {
        let (tx, rx) = mpsc::channel(self.readahead_chunks);
        let mut stream = range_stream(&self.backend, self.pos, self.size);
        let task = runtime().spawn(async move {
            while let Some(item) = stream.next().await {
                let stop = item.is_err();
                if tx.send(item).await.is_err() || stop {
                    break;
                }
            }
        });
        self.prefetch = Some(Prefetch { rx, task });
    }

    /// At the end of an HDFS file, asks the namenode whether it has grown (a file being
    /// written and published by stf_writer_sync, such as an event file TensorBoard
    /// follows). Returns whether there is more to read.
    fn grow(&mut self) -> Res<bool> {
        let Some((client, path)) = self.source.clone() else { return Ok(false) };
        let r = block_on_timeout(self.timeout, "open", client.read(&path))?.map_err(hdfs_error)?;
        let len = r.file_length() as u64;
        if len <= self.size {
            return Ok(false);
        }
        self.backend = ReaderBackend::Hdfs(Arc::new(r));
        self.size = len;
        self.prefetch = None;
        self.chunk = Bytes::new();
        Ok(true)
    }

    fn read(&mut self, dst: &mut [u8]) -> Res<usize> {
        if dst.is_empty() {
            return Ok(0);
        }
        if self.pos >= self.size && !self.grow()? {
            return Ok(0);
        }
        if self.chunk.is_empty() {
            if self.prefetch.is_none() {
                self.start_prefetch();
            }
            let rx = &mut self.prefetch.as_mut().unwrap().rx;
            let timeout = self.timeout;
            let next = block_on_timeout(timeout, "read", rx.recv())?;
            match next {
                Some(Ok(bytes)) => self.chunk = bytes,
                Some(Err(e)) => {
                    self.prefetch = None;  // a retry starts again at pos
                    return Err(e);
                }
                None => {
                    self.prefetch = None;
                    return Err(Error::new(DATA_LOSS, format!(
                        "stream ended at byte {} of {}", self.pos, self.size)));
                }
            }
        }
        let n = dst.len().min(self.chunk.len());
        dst[..n].copy_from_slice(&self.chunk[..n]);
        let _ = self.chunk.split_to(n);
        self.pos += n as u64;
        Ok(n)
    }

    fn read_at(&self, offset: u64, dst: &mut [u8]) -> Res<usize> {
        if offset >= self.size || dst.is_empty() {
            return Ok(0);
        }
        let end = (offset + dst.len() as u64).min(self.size);
        let mut stream = range_stream(&self.backend, offset, end);
        let mut filled = 0usize;
        block_on_timeout(self.timeout, "read", async {
            while let Some(item) = stream.next().await {
                let bytes = item?;
                let n = bytes.len().min(dst.len() - filled);
                dst[filled..filled + n].copy_from_slice(&bytes[..n]);
                filled += n;
            }
            Ok::<(), Error>(())
        })??;
        Ok(filled)
    }
}

/// Reads up to `n` bytes at the reader's position into `dst`; `*got` is 0 only at the
/// end of the file. Reads ahead in the background. A failed read keeps the position.
#[no_mangle]
pub extern "C" fn stf_reader_read(r: *mut StfReader, dst: *mut u8, n: usize, got: *mut usize,
                                  err: *mut *mut c_char) -> i32 {
    ffi(err, || {
        let r = unsafe { &mut *r };
        let buf = unsafe { std::slice::from_raw_parts_mut(dst, n) };
        let k = r.read(buf)?;
        unsafe { *got = k };
        Ok(())
    })
}

/// Reads up to `n` bytes at `offset` without moving the position (fewer only at the end).
#[no_mangle]
pub extern "C" fn stf_reader_read_at(r: *mut StfReader, offset: u64, dst: *mut u8, n: usize,
                                     got: *mut usize, err: *mut *mut c_char) -> i32 {
    ffi(err, || {
        let r = unsafe { &*r };
        let buf = unsafe { std::slice::from_raw_parts_mut(dst, n) };
        let k = r.read_at(offset, buf)?;
        unsafe { *got = k };
        Ok(())
    })
}

/// Moves the position; the next read starts a new stream there. Past the end of an HDFS
/// file, first asks whether it has grown; OUT_OF_RANGE if the offset is still past it.
#[no_mangle]
pub extern "C" fn stf_reader_seek(r: *mut StfReader, offset: u64, err: *mut *mut c_char) -> i32 {
    ffi(err, || {
        let r = unsafe { &mut *r };
        if offset > r.size && !(r.grow()? && offset <= r.size) {
            return Err(Error::new(OUT_OF_RANGE,
                                  format!("seek to {offset} past the end ({} bytes)", r.size)));
        }
        if offset != r.pos {
            r.pos = offset;
            r.chunk = Bytes::new();
            r.prefetch = None;
        }
        Ok(())
    })
}

/// The file's length as last seen: it grows when a read or seek at the end finds that an
/// HDFS file being written has grown.
#[no_mangle]
pub extern "C" fn stf_reader_size(r: *const StfReader) -> u64 {
    unsafe { (*r).size }
}

#[no_mangle]
pub extern "C" fn stf_reader_free(r: *mut StfReader) {
    if !r.is_null() {
        let r = unsafe { Box::from_raw(r) };
        // Aborting the prefetch task must happen with the runtime alive (it always is).
        drop(r);
    }
}

// ---- writers --------------------------------------------------------------------------

enum WriterBackend {
    Hdfs(hdfs_native::file::FileWriter),
    S3(BufWriter),
}

pub struct StfWriter {
    backend: Option<WriterBackend>,
    fs: Backend,
    path: String,
    timeout: Duration,
    pending: Vec<u8>,
}

const WRITE_CHUNK: usize = 4 << 20;

/// Creates `path` for writing; fails with ALREADY_EXISTS if it exists. On HDFS the file
/// is visible (being written) until commit, so callers write a temporary name and rename;
/// on S3 nothing is visible until commit (a multipart upload for large objects).
#[no_mangle]
pub extern "C" fn stf_writer_open(fs: *mut StfFs, path: *const c_char, create_parents: u8,
                                  out: *mut *mut StfWriter, err: *mut *mut c_char) -> i32 {
    ffi(err, || {
        let fs = fs_ref(fs)?;
        let path = cstr(path, "path")?;
        let backend = match &fs.backend {
            Backend::Hdfs(c) => {
                let opts = hdfs_native::WriteOptions::default().create_parent(create_parents != 0);
                let w = block_on_timeout(fs.timeout, "create", c.create(path, opts))?
                    .map_err(hdfs_error)?;
                WriterBackend::Hdfs(w)
            }
            Backend::S3(s) => {
                let store: Arc<dyn ObjectStore> = Arc::clone(s) as Arc<dyn ObjectStore>;
                let _guard = runtime().enter();
                WriterBackend::S3(BufWriter::with_capacity(store, obj_path(path)?, 8 << 20))
            }
        };
        let w = StfWriter {
            backend: Some(backend),
            fs: fs.backend.clone(),
            path: path.to_string(),
            timeout: fs.timeout,
            pending: Vec::with_capacity(WRITE_CHUNK),
        };
        unsafe { *out = Box::into_raw(Box::new(w)) };
        Ok(())
    })
}

impl StfWriter {
    fn flush_pending(&mut self) -> Res<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let data = Bytes::from(std::mem::replace(&mut self.pending,
                                                 Vec::with_capacity(WRITE_CHUNK)));
        let timeout = self.timeout;
        match self.backend.as_mut() {
            Some(WriterBackend::Hdfs(w)) => {
                block_on_timeout(timeout, "write", w.write_bytes(data))?.map_err(hdfs_error)?;
            }
            Some(WriterBackend::S3(w)) => {
                block_on_timeout(timeout, "write", w.write_all(&data))?
                    .map_err(|e| Error::new(io_kind_code(e.kind()), flatten_error(&e)))?;
            }
            None => return Err(Error::new(INVALID_ARGUMENT, "writer is closed")),
        }
        Ok(())
    }
}

#[no_mangle]
pub extern "C" fn stf_writer_write(w: *mut StfWriter, data: *const u8, n: usize,
                                   err: *mut *mut c_char) -> i32 {
    ffi(err, || {
        let w = unsafe { &mut *w };
        if w.backend.is_none() {
            return Err(Error::new(INVALID_ARGUMENT, "writer is closed"));
        }
        let data = unsafe { std::slice::from_raw_parts(data, n) };
        w.pending.extend_from_slice(data);
        if w.pending.len() >= WRITE_CHUNK {
            w.flush_pending()?;
        }
        Ok(())
    })
}

/// Pushes what was written so far to the store. On HDFS it is an hsync: durable on every
/// datanode of the pipeline, and the namenode records the length, so that a reader opened
/// afterwards (this crate's: see third_party/hdfs-native/PATCHES.md) sees all of it while
/// the file is still being written. (Measured on the minicluster: about 6 ms.) On S3
/// nothing is visible before commit: only the buffer is pushed into the upload.
#[no_mangle]
pub extern "C" fn stf_writer_sync(w: *mut StfWriter, err: *mut *mut c_char) -> i32 {
    ffi(err, || {
        let w = unsafe { &mut *w };
        w.flush_pending()?;
        let timeout = w.timeout;
        match w.backend.as_mut() {
            Some(WriterBackend::Hdfs(f)) => {
                block_on_timeout(timeout, "hsync", f.hsync())?.map_err(hdfs_error)
            }
            Some(WriterBackend::S3(_)) => Ok(()),
            None => Err(Error::new(INVALID_ARGUMENT, "writer is closed")),
        }
    })
}

/// Finishes the file: everything written becomes durable and (S3) visible.
#[no_mangle]
pub extern "C" fn stf_writer_commit(w: *mut StfWriter, err: *mut *mut c_char) -> i32 {
    ffi(err, || {
        let w = unsafe { &mut *w };
        w.flush_pending()?;
        let timeout = w.timeout;
        match w.backend.take() {
            Some(WriterBackend::Hdfs(mut f)) => {
                block_on_timeout(timeout, "close", f.close())?.map_err(hdfs_error)
            }
            Some(WriterBackend::S3(mut b)) => block_on_timeout(timeout, "complete upload",
                                                               b.shutdown())?
                .map_err(|e| Error::new(io_kind_code(e.kind()), flatten_error(&e))),
            None => Err(Error::new(INVALID_ARGUMENT, "writer is closed")),
        }
    })
}

/// Drops what was written: nothing is left at the path (HDFS: the partial file is
/// deleted; S3: the upload is aborted).
#[no_mangle]
pub extern "C" fn stf_writer_abort(w: *mut StfWriter, err: *mut *mut c_char) -> i32 {
    ffi(err, || {
        let w = unsafe { &mut *w };
        w.pending.clear();
        let timeout = w.timeout;
        match w.backend.take() {
            Some(WriterBackend::Hdfs(mut f)) => {
                let _ = block_on_timeout(timeout, "close", f.close());
                if let Backend::Hdfs(c) = &w.fs {
                    let _ = block_on_timeout(timeout, "delete", c.delete(&w.path, false))?;
                }
                Ok(())
            }
            Some(WriterBackend::S3(mut b)) => block_on_timeout(timeout, "abort upload", b.abort())?
                .map_err(s3_error),
            None => Ok(()),
        }
    })
}

#[no_mangle]
pub extern "C" fn stf_writer_free(w: *mut StfWriter) {
    if !w.is_null() {
        drop(unsafe { Box::from_raw(w) });
    }
}

// ---- configuration --------------------------------------------------------------------

/// Where HDFS configuration is read from: $HADOOP_CONF_DIR, else $HADOOP_HOME/etc/hadoop.
fn hadoop_conf_dir() -> Option<PathBuf> {
    if let Ok(dir) = std::env::var("HADOOP_CONF_DIR") {
        return Some(PathBuf::from(dir));
    }
    std::env::var("HADOOP_HOME").ok().map(|h| PathBuf::from(h).join("etc").join("hadoop"))
}

fn read_hadoop_xml(path: &std::path::Path, into: &mut Vec<(String, String)>) {
    let Ok(text) = std::fs::read_to_string(path) else { return };
    let Ok(doc) = roxmltree::Document::parse(&text) else { return };
    for prop in doc.descendants().filter(|n| n.has_tag_name("property")) {
        let get = |tag: &str| {
            prop.children().find(|c| c.has_tag_name(tag)).and_then(|c| c.text())
                .map(|t| t.trim().to_string())
        };
        if let (Some(k), Some(v)) = (get("name"), get("value")) {
            into.push((k, v));
        }
    }
}

/// hdfs-native retries a namenode that does not answer up to 15 times with sleeps growing
/// to 15 s, which for an HA pair rides out a failover, but for a single namenode that is
/// down only delays the error by minutes. For a single namenode (no dfs.ha.namenodes for
/// the URL's host) this retries 3 times within about 2 s, unless the configuration says
/// otherwise.
fn single_namenode_failover_defaults(url: &str) -> Vec<(String, String)> {
    let conf = hadoop_conf();
    let get = |k: &str| conf.iter().rev().find(|(ck, _)| ck == k).map(|(_, v)| v.clone());
    let host = match url::Url::parse(url).ok().and_then(|u| u.host_str().map(String::from)) {
        Some(h) => h,
        None => get("fs.defaultFS")
            .and_then(|d| url::Url::parse(&d).ok())
            .and_then(|u| u.host_str().map(String::from))
            .unwrap_or_default(),
    };
    if get(&format!("dfs.ha.namenodes.{host}")).is_some() {
        return Vec::new();
    }
    [
        ("dfs.client.failover.max.attempts", "3"),
        ("dfs.client.failover.sleep.base.millis", "200"),
        ("dfs.client.failover.sleep.max.millis", "1000"),
    ]
    .into_iter()
    .filter(|(k, _)| get(k).is_none())
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// core-site.xml and hdfs-site.xml of hadoop_conf_dir(), later files winning.
fn hadoop_conf() -> Vec<(String, String)> {
    let mut conf = Vec::new();
    if let Some(d) = hadoop_conf_dir() {
        for f in ["core-site.xml", "hdfs-site.xml"] {
            read_hadoop_xml(&d.join(f), &mut conf);
        }
    }
    conf
}

/// Describes, for error messages, which namenode(s) `url` means and where that came
/// from, e.g. "namenode 127.0.0.1:9000 (fs.defaultFS in /etc/hadoop/core-site.xml)".
#[no_mangle]
pub extern "C" fn stf_hdfs_describe(url: *const c_char) -> *mut c_char {
    let text = (|| -> String {
        let Ok(url) = cstr(url, "url") else { return String::new() };
        let dir = hadoop_conf_dir();
        let mut conf = Vec::new();
        let mut sources = Vec::new();
        if let Some(d) = &dir {
            for f in ["core-site.xml", "hdfs-site.xml"] {
                let p = d.join(f);
                if p.exists() {
                    read_hadoop_xml(&p, &mut conf);
                    sources.push(p.display().to_string());
                }
            }
        }
        let get = |k: &str| conf.iter().rev().find(|(ck, _)| ck == k).map(|(_, v)| v.clone());
        let parsed = url::Url::parse(url).ok();
        let (authority, origin) = match parsed.as_ref().and_then(|u| u.host_str()) {
            Some(h) => (match parsed.as_ref().and_then(|u| u.port()) {
                Some(p) => format!("{h}:{p}"),
                None => h.to_string(),
            }, "from the URI".to_string()),
            None => match get("fs.defaultFS") {
                Some(d) => (d.trim_start_matches("hdfs://").trim_end_matches('/').to_string(),
                            format!("fs.defaultFS in {}", sources.first().cloned()
                                    .unwrap_or_default())),
                None => {
                    return match &dir {
                        Some(d) => format!("no fs.defaultFS in {} (set HADOOP_CONF_DIR to the \
                                            directory of core-site.xml)", d.display()),
                        None => "no HADOOP_CONF_DIR or HADOOP_HOME set, so no fs.defaultFS"
                            .to_string(),
                    }
                }
            },
        };
        let host = authority.split(':').next().unwrap_or("").to_string();
        let nns = get(&format!("dfs.ha.namenodes.{host}"));
        let origin = if nns.is_some() {
            format!("nameservice {host} in {}", sources.join(" and "))
        } else {
            origin
        };
        let addresses = match nns {
            Some(list) => list
                .split(',')
                .filter_map(|nn| get(&format!("dfs.namenode.rpc-address.{host}.{}", nn.trim())))
                .collect::<Vec<_>>()
                .join(", "),
            None if authority.contains(':') => authority.clone(),
            None => format!("{authority}:8020"),
        };
        let conf_note = match &dir {
            Some(d) if sources.is_empty() => format!("; no core-site.xml in {}", d.display()),
            Some(_) => String::new(),
            None => "; HADOOP_CONF_DIR is not set".to_string(),
        };
        let kind = if addresses.contains(',') { "namenodes" } else { "namenode" };
        format!("{kind} {addresses} ({origin}{conf_note})")
    })();
    CString::new(text).unwrap_or_default().into_raw()
}

/// The filesystem named by fs.defaultFS in the Hadoop configuration, or "" if none.
#[no_mangle]
pub extern "C" fn stf_hadoop_default_fs() -> *mut c_char {
    let conf = hadoop_conf();
    let v = conf.iter().rev().find(|(k, _)| k == "fs.defaultFS").map(|(_, v)| v.clone())
        .unwrap_or_default();
    CString::new(v).unwrap_or_default().into_raw()
}
