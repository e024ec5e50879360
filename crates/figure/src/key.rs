//! A figure's identity: which benchmark, by which method, under which parameters.
//!
//! Why a type: a key declared again as plain text in every struct that carries one,
//! with parameters read by a literal name wherever they are needed, lets a renaming
//! empty a chart or break a simulated profile with no compiler error. Here the
//! benchmark id is a [`BenchId`] the producers declare as constants, a parameter is
//! read and written through a [`Param`] the producer owning it declares with its
//! value's type, and the three travel together as a [`FigureKey`]. The stored text
//! stays what databases and exports have always held: the id's text, the method's
//! snake_case name and the parameters as a JSON object.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::marker::PhantomData;

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize};

/// How a figure was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Many calls timed as one interval, divided by their number; samples are batch means.
    Batch,
    /// Each call bracketed by the cycle counter; samples are single calls.
    PerCall,
    /// A rate or total over a fixed-time workload (ops per second, shares).
    Workload,
    /// A least-squares fit over a sweep (slope per unit).
    Fit,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Batch => "batch",
            Method::PerCall => "per_call",
            Method::Workload => "workload",
            Method::Fit => "fit",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "batch" => Some(Method::Batch),
            "per_call" => Some(Method::PerCall),
            "workload" => Some(Method::Workload),
            "fit" => Some(Method::Fit),
            _ => None,
        }
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A benchmark's id (`ctx.pipe`, `load.runqueue`), stored as its text.
///
/// The producers declare theirs as constants ([`BenchId::new`]) and the registry hands
/// those out; an id read back from a database or an export ([`BenchId::stored`]) may
/// name a benchmark this build no longer has, and is kept as it was written.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct BenchId(Cow<'static, str>);

impl BenchId {
    /// A producer's id, declared once where the benchmark is.
    pub const fn new(id: &'static str) -> Self {
        BenchId(Cow::Borrowed(id))
    }

    /// An id as a database, an export or a command line gave it.
    pub fn stored(text: impl Into<String>) -> Self {
        BenchId(Cow::Owned(text.into()))
    }

    /// The id's text, as stored.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The family part of the id: `ctx` of `ctx.pipe`.
    pub fn family(&self) -> &str {
        self.0.split('.').next().unwrap_or_default()
    }
}

impl std::ops::Deref for BenchId {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for BenchId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for BenchId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for BenchId {
    /// Honours width and alignment (`{:<24}`), as a string does: lists align on it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(&self.0)
    }
}

impl std::fmt::Debug for BenchId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.0, f)
    }
}

impl PartialEq<str> for BenchId {
    fn eq(&self, other: &str) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<&str> for BenchId {
    fn eq(&self, other: &&str) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<BenchId> for str {
    fn eq(&self, other: &BenchId) -> bool {
        *self == *other.0
    }
}

impl PartialEq<BenchId> for &str {
    fn eq(&self, other: &BenchId) -> bool {
        **self == *other.0
    }
}

impl PartialEq<String> for BenchId {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<BenchId> for String {
    fn eq(&self, other: &BenchId) -> bool {
        **self == *other.0
    }
}

impl From<&BenchId> for BenchId {
    fn from(id: &BenchId) -> Self {
        id.clone()
    }
}

impl From<&str> for BenchId {
    fn from(text: &str) -> Self {
        BenchId::stored(text)
    }
}

impl From<String> for BenchId {
    fn from(text: String) -> Self {
        BenchId::stored(text)
    }
}

/// The kind of value a [`Param`] holds, and how it is read from and written to the
/// stored JSON value.
pub trait ParamType {
    /// What a read gives (`&str` for text, the number itself for numbers).
    type Read<'a>;
    /// What a write takes.
    type Write;
    fn read(value: &serde_json::Value) -> Option<Self::Read<'_>>;
    fn write(value: Self::Write) -> serde_json::Value;
}

/// A text parameter (`mode=process`).
#[derive(Debug, Clone, Copy)]
pub struct Text;

impl ParamType for Text {
    type Read<'a> = &'a str;
    type Write = String;
    fn read(value: &serde_json::Value) -> Option<&str> {
        value.as_str()
    }
    fn write(value: String) -> serde_json::Value {
        value.into()
    }
}

impl ParamType for u64 {
    type Read<'a> = u64;
    type Write = u64;
    fn read(value: &serde_json::Value) -> Option<u64> {
        value.as_u64()
    }
    fn write(value: u64) -> serde_json::Value {
        value.into()
    }
}

impl ParamType for i64 {
    type Read<'a> = i64;
    type Write = i64;
    fn read(value: &serde_json::Value) -> Option<i64> {
        value.as_i64()
    }
    fn write(value: i64) -> serde_json::Value {
        value.into()
    }
}

impl ParamType for f64 {
    type Read<'a> = f64;
    type Write = f64;
    fn read(value: &serde_json::Value) -> Option<f64> {
        value.as_f64()
    }
    fn write(value: f64) -> serde_json::Value {
        value.into()
    }
}

impl ParamType for bool {
    type Read<'a> = bool;
    type Write = bool;
    fn read(value: &serde_json::Value) -> Option<bool> {
        value.as_bool()
    }
    fn write(value: bool) -> serde_json::Value {
        value.into()
    }
}

/// A parameter that holds structured data (a cost profile, a judgement), read as
/// its stored JSON value for its owner to decode.
#[derive(Debug, Clone, Copy)]
pub struct Json;

impl ParamType for Json {
    type Read<'a> = &'a serde_json::Value;
    type Write = serde_json::Value;
    fn read(value: &serde_json::Value) -> Option<&serde_json::Value> {
        Some(value)
    }
    fn write(value: serde_json::Value) -> serde_json::Value {
        value
    }
}

/// A parameter a producer declares: its stored name and its value's type. Reading
/// and writing through it is the only way a name is spelled, so a rename is one edit
/// and a wrong type a compiler error.
pub struct Param<T> {
    name: &'static str,
    kind: PhantomData<fn() -> T>,
}

impl<T> Param<T> {
    pub const fn new(name: &'static str) -> Self {
        Param { name, kind: PhantomData }
    }

    /// The name the parameter is stored under.
    pub const fn name(&self) -> &'static str {
        self.name
    }
}

impl<T> Clone for Param<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Param<T> {}

impl<T> std::fmt::Debug for Param<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Param({})", self.name)
    }
}

/// The parameters that are bookkeeping, not part of what tells variants apart: the
/// batch size a row was timed with, a path or statement it ran, and a model's inputs
/// and judgement ([`MODEL_INPUTS`]).
const BOOKKEEPING: [&str; 3] = [BATCH_SIZE.name(), "path", STATEMENT.name()];

/// The parameters a simulated figure carries as what its model stood on and what it
/// says of its robustness: a structure each, read by `-v`, the JSON and the reprint's
/// notes, never part of a label (a label names the figure; these would fill a screen).
pub const MODEL_INPUTS: [&str; 4] = [COST_PROFILE.name(), SENSITIVITY.name(), JUDGEMENT.name(), FRAGILE.name()];

/// Whether the parameter `name` is left out of a variant's identity and label.
fn is_bookkeeping(name: &str) -> bool {
    BOOKKEEPING.contains(&name) || MODEL_INPUTS.contains(&name)
}

/// A simulated row's whole cost profile.
pub const COST_PROFILE: Param<Json> = Param::new("cost_profile");
/// A simulated figure's sensitivity to each assumed cost term.
pub const SENSITIVITY: Param<Json> = Param::new("sensitivity");
/// A judged conclusion's judgement.
pub const JUDGEMENT: Param<Json> = Param::new("judgement");
/// Whether a simulated row (a conclusion or a figure it is drawn from) is fragile: a
/// ±50% change of one assumed term flips it.
pub const FRAGILE: Param<bool> = Param::new("fragile");

/// The calls one timed sample of a batch row holds.
pub const BATCH_SIZE: Param<u64> = Param::new("batch_size");
/// A fitted row's statement of what its fit says.
pub const STATEMENT: Param<Text> = Param::new("statement");
/// The label a run's placement adds to every row it measured (a pinned CPU, a nice
/// value): written by the worker, read by the conditions that change it.
pub const RUNNER: Param<Text> = Param::new("runner");
/// The scheduling policy a row was measured under, when not the default.
pub const SCHED_POLICY: Param<Text> = Param::new("policy");
/// `shared` on the twin of a figure that holds the rounds measured while the host
/// shared the measuring CPU's core (`measure::shared_core`); absent on the figure.
pub const SHARED_CORE: Param<Text> = Param::new("core");

/// A variant's parameters, stored as a JSON object of name to value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Params(BTreeMap<String, serde_json::Value>);

impl Params {
    pub fn new() -> Self {
        Params::default()
    }

    /// Whether these are the parameters of a figure's `core=shared` twin
    /// ([`SHARED_CORE`]).
    pub fn is_shared_core_twin(&self) -> bool {
        self.get(SHARED_CORE) == Some("shared")
    }

    /// A declared parameter's value; None when it is absent or of another type.
    pub fn get<T: ParamType>(&self, p: Param<T>) -> Option<T::Read<'_>> {
        self.0.get(p.name).and_then(T::read)
    }

    /// Sets a declared parameter.
    pub fn set<T: ParamType>(&mut self, p: Param<T>, value: impl Into<T::Write>) {
        self.0.insert(p.name.to_string(), T::write(value.into()));
    }

    /// This set with a declared parameter set.
    pub fn with<T: ParamType>(mut self, p: Param<T>, value: impl Into<T::Write>) -> Self {
        self.set(p, value);
        self
    }

    /// Whether `other` names the same variant: the same parameters with the same values,
    /// bookkeeping aside (what [`Params::label`] equal would say, without the text).
    pub fn same_variant(&self, other: &Params) -> bool {
        fn told(p: &Params) -> impl Iterator<Item = (&String, &serde_json::Value)> {
            p.0.iter().filter(|(k, _)| !is_bookkeeping(k))
        }
        told(self).eq(told(other))
    }

    /// Whether every parameter of `other` is here, with the same value.
    pub fn includes(&self, other: &Params) -> bool {
        other.0.iter().all(|(k, v)| self.0.get(k) == Some(v))
    }

    /// Whether every parameter of `want` is here with the same value, a number and
    /// the text of that number counting as one value: a row read back from an export
    /// or an older database may hold a count as either, and a layout that selects rows
    /// by their variant takes both.
    pub fn matches(&self, want: &Params) -> bool {
        self.matches_with_defaults(want, &Params::new())
    }

    /// [`Params::matches`], a parameter absent here taking its value in `defaults`:
    /// for a producer that leaves a parameter unwritten while it holds its default.
    pub fn matches_with_defaults(&self, want: &Params, defaults: &Params) -> bool {
        want.0.iter().all(|(k, v)| self.0.get(k).or_else(|| defaults.0.get(k)).is_some_and(|got| same_value(got, v)))
    }

    /// Sets a parameter by its stored name: for code that copies parameters whose
    /// names it does not own (labels a run adds to every row, a condition's settings).
    pub fn insert(&mut self, name: String, value: serde_json::Value) {
        self.0.insert(name, value);
    }

    /// Removes a parameter by its stored name.
    pub fn remove(&mut self, name: &str) -> Option<serde_json::Value> {
        self.0.remove(name)
    }

    /// A parameter's stored value by its name.
    pub fn raw(&self, name: &str) -> Option<&serde_json::Value> {
        self.0.get(name)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Every parameter, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &serde_json::Value)> {
        self.0.iter()
    }

    /// The parameters that tell variants apart, each as `name=value` (bookkeeping
    /// left out).
    pub fn variant_params(&self) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| !is_bookkeeping(k))
            .map(|(k, v)| match v {
                serde_json::Value::String(s) => format!("{k}={s}"),
                other => format!("{k}={other}"),
            })
            .collect()
    }

    /// [`Params::variant_params`] as one short string, such as
    /// `mode=process placement=same_cpu`.
    pub fn label(&self) -> String {
        self.variant_params().join(" ")
    }
}

/// Whether two stored values are one: equal, or a whole number and its text.
fn same_value(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (a, b) {
        (Value::Number(n), Value::String(s)) | (Value::String(s), Value::Number(n)) => {
            n.as_u64().is_some_and(|n| s.parse() == Ok(n)) || n.as_i64().is_some_and(|n| s.parse() == Ok(n))
        }
        _ => a == b,
    }
}

impl FromIterator<(String, serde_json::Value)> for Params {
    fn from_iter<I: IntoIterator<Item = (String, serde_json::Value)>>(iter: I) -> Self {
        Params(iter.into_iter().collect())
    }
}

impl<'a> IntoIterator for &'a Params {
    type Item = (&'a String, &'a serde_json::Value);
    type IntoIter = std::collections::btree_map::Iter<'a, String, serde_json::Value>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// A variant named as text only: one that was not measured (skipped, failed), so has no
/// row whose parameters could name it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct VariantText(String);

impl VariantText {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for VariantText {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for VariantText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for VariantText {
    fn from(text: &str) -> Self {
        VariantText(text.to_string())
    }
}

impl From<String> for VariantText {
    fn from(text: String) -> Self {
        VariantText(text)
    }
}

/// One figure's identity: its benchmark, its method and its variant's parameters.
///
/// Reports print it, and JSON output writes it, as `benchmark`, `variant` (the
/// parameters' label) and `method`, as they always have. Two keys name the same figure
/// when benchmark, method and label agree (bookkeeping parameters aside).
#[derive(Debug, Clone)]
pub struct FigureKey {
    pub bench: BenchId,
    pub method: Method,
    params: Params,
    /// The parameters' label, made once: reports match and print figures by it.
    variant: String,
}

impl FigureKey {
    pub fn new(bench: BenchId, method: Method, params: Params) -> Self {
        let variant = params.label();
        FigureKey { bench, method, params, variant }
    }

    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The variant's label (`mode=process placement=same_cpu`).
    pub fn variant(&self) -> &str {
        &self.variant
    }

    /// The figure's name: benchmark, variant and method (`ctx.pipe mode=process [batch]`).
    pub fn figure(&self) -> String {
        let variant = if self.variant.is_empty() { String::new() } else { format!(" {}", self.variant) };
        format!("{}{variant} [{}]", self.bench, self.method.as_str())
    }
}

impl PartialEq for FigureKey {
    fn eq(&self, other: &FigureKey) -> bool {
        self.bench == other.bench && self.method == other.method && self.variant == other.variant
    }
}

impl Serialize for FigureKey {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("benchmark", &self.bench)?;
        m.serialize_entry("variant", &self.variant)?;
        m.serialize_entry("method", self.method.as_str())?;
        m.end()
    }
}

/// Whether a figure's peers are threads or processes: a parameter the families measure
/// under and the simulator models (`mode=thread`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Thread,
    Process,
}

impl Mode {
    /// The parameter a row measured with threads or processes carries (`mode=thread`).
    pub const PARAM: Param<Text> = Param::new("mode");

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Thread => "thread",
            Mode::Process => "process",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODE: Param<Text> = Param::new("mode");
    const TASKS: Param<u64> = Param::new("tasks");

    #[test]
    fn a_declared_parameter_reads_back_what_was_written_and_nothing_of_another_type() {
        let p = Params::new().with(MODE, "process").with(TASKS, 4u64);
        assert_eq!(p.get(MODE), Some("process"));
        assert_eq!(p.get(TASKS), Some(4));
        assert_eq!(p.get(Param::<u64>::new("mode")), None);
        assert_eq!(p.get(Param::<Text>::new("absent")), None);
    }

    #[test]
    fn parameters_and_ids_are_stored_as_the_text_they_always_were() {
        let p = Params::new().with(MODE, "thread").with(TASKS, 8u64).with(Param::<u64>::new("batch_size"), 100u64);
        assert_eq!(serde_json::to_string(&p).unwrap(), r#"{"batch_size":100,"mode":"thread","tasks":8}"#);
        assert_eq!(p.label(), "mode=thread tasks=8");
        let id = BenchId::new("ctx.pipe");
        assert_eq!(serde_json::to_string(&id).unwrap(), r#""ctx.pipe""#);
        assert_eq!(serde_json::from_str::<BenchId>(r#""ctx.pipe""#).unwrap(), id);
        assert_eq!(id.family(), "ctx");
        // Printed as its text, padded as a string is (`oscost list` aligns on it).
        assert_eq!(format!("[{id:<10}]"), "[ctx.pipe  ]");
    }

    #[test]
    fn a_wanted_variant_matches_its_numbers_stored_as_numbers_or_as_their_text() {
        const NICE: Param<i64> = Param::new("nice");
        let want = Params::new().with(MODE, "process").with(TASKS, 2u64).with(NICE, -5i64);
        let typed = Params::new().with(MODE, "process").with(TASKS, 2u64).with(NICE, -5i64).with(BATCH_SIZE, 9u64);
        assert!(typed.matches(&want));
        let as_text: Params = [("mode", "process"), ("tasks", "2"), ("nice", "-5")]
            .map(|(k, v)| (k.to_string(), v.into()))
            .into_iter()
            .collect();
        assert!(as_text.matches(&want));
        assert!(!typed.matches(&want.clone().with(TASKS, 4u64)));
        assert!(!as_text.matches(&Params::new().with(MODE, "thread")));
        assert!(!typed.matches(&Params::new().with(Param::<Text>::new("absent"), "x")));
        // A number's text is its whole text, and a text is no number's.
        assert!(!Params::new().with(Param::<Text>::new("tasks"), "2x").matches(&Params::new().with(TASKS, 2u64)));
        assert!(Params::new().matches(&Params::new()));
        // A parameter left unwritten at its default matches the default alone.
        let defaults = Params::new().with(MODE, "process").with(NICE, 0i64);
        let unwritten = Params::new().with(TASKS, 2u64);
        assert!(unwritten.matches_with_defaults(&Params::new().with(MODE, "process").with(NICE, 0i64), &defaults));
        assert!(!unwritten.matches_with_defaults(&Params::new().with(MODE, "thread"), &defaults));
        assert!(!unwritten.matches_with_defaults(&Params::new().with(NICE, 19i64), &defaults));
        assert!(!unwritten.matches(&Params::new().with(MODE, "process")));
    }

    #[test]
    fn a_key_is_written_as_benchmark_variant_and_method() {
        let key = FigureKey::new(BenchId::new("ctx.pipe"), Method::Batch, Params::new().with(MODE, "process"));
        assert_eq!(
            serde_json::to_string(&key).unwrap(),
            r#"{"benchmark":"ctx.pipe","variant":"mode=process","method":"batch"}"#
        );
        assert_eq!(key.figure(), "ctx.pipe mode=process [batch]");
    }
}
