//! `semfuzz known list`: the suppression entries and their scope. (`known explain` shares
//! `run`'s code: see `run::explain`.)

use judge::entries::{Entry, EntryKind, Facts};
use serde_json::{Value, json};

use crate::cli::KnownListArgs;
use crate::exit::{Failure, Outcome};

pub fn list(args: &KnownListArgs) -> Result<Outcome, Failure> {
    let s = super::suppressions(&args.suppressions)?;
    for e in s.entries() {
        if args.json {
            println!("{}", entry_json(e));
        } else {
            let kind = match e.kind {
                EntryKind::Bug => "bug",
                EntryKind::Limitation => "limitation",
            };
            println!("{} ({kind}): {}", e.id, e.summary);
            println!("    {}", e.scope());
            println!("    from {}", e.source.display());
        }
    }
    if !args.json {
        println!("{} entries", s.entries().len());
    }
    Ok(Outcome::Clean)
}

pub(crate) fn entry_json(e: &Entry) -> Value {
    json!({
        "id": &*e.id,
        "kind": e.kind,
        "summary": e.summary,
        "releases": e.releases,
        "backends": e.backends,
        "scope": e.scope(),
        "source": e.source.display().to_string(),
        "trigger": e.trigger.map(|t| t.name()),
    })
}

/// Conditions whose failure says the entry is about another verdict or layer altogether: an
/// entry that fails only on these is not worth naming as a near miss.
const UNRELATED: [&str; 4] = ["verdicts", "classes", "layer", "backends"];

/// Which entries explain the verdict (each with the alternative that held), and which near
/// entries do not (each with the first condition that failed in each alternative).
pub fn explanation(s: &judge::Suppressions, facts: &Facts) -> Value {
    let mut explained = Vec::new();
    let mut near = Vec::new();
    for e in s.entries() {
        match e.why_not(facts) {
            Ok(i) => explained.push(json!({"entry": &*e.id, "alternative": i})),
            Err(failed) => {
                if failed.iter().any(|f| !UNRELATED.contains(f)) {
                    near.push(json!({"entry": &*e.id, "failed": failed}));
                }
            }
        }
    }
    json!({"explained_by": explained, "near": near})
}
