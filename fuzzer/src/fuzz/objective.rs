//! The objective: every finding verdict of an execution goes to the findings store; the
//! execution is a new objective only when it brought a signature never seen before (by any
//! client, in any earlier run of the campaign).

use std::borrow::Cow;

use libafl::Error;
use libafl::executors::ExitKind;
use libafl::feedbacks::{Feedback, StateInitializer};
use libafl_bolts::Named;
use libafl_bolts::tuples::{Handle, Handled, MatchNameRef};

use super::executor::VerdictObserver;
use super::findings::{FindingsStore, Hit};
use super::input::CaseInput;
use crate::isolated::isolated_case;

pub struct FindingFeedback {
    handle: Handle<VerdictObserver>,
    pub store: FindingsStore,
    /// Print new findings (the user's view); tests of the library keep quiet.
    announce: bool,
}

impl FindingFeedback {
    pub fn new(observer: &VerdictObserver, store: FindingsStore, announce: bool) -> Self {
        FindingFeedback {
            handle: observer.handle(),
            store,
            announce,
        }
    }
}

impl Named for FindingFeedback {
    fn name(&self) -> &Cow<'static, str> {
        static NAME: Cow<'static, str> = Cow::Borrowed("findings");
        &NAME
    }
}

impl<S> StateInitializer<S> for FindingFeedback {}

impl<EM, OT: MatchNameRef, S> Feedback<EM, CaseInput, OT, S> for FindingFeedback {
    fn is_interesting(
        &mut self,
        _state: &mut S,
        _mgr: &mut EM,
        input: &CaseInput,
        observers: &OT,
        _exit_kind: &ExitKind,
    ) -> Result<bool, Error> {
        let Some(observer) = observers.get(&self.handle) else {
            return Err(Error::key_not_found("the verdict observer is missing"));
        };
        let mut new = false;
        for execution in &observer.last {
            // The case as the target ran it (adapted to another Keras release), so that the
            // finding's repro runs there.
            let case = match &execution.adapted {
                Some(c) => c.clone(),
                None => input.case().map_err(|e| {
                    Error::illegal_state(format!("a test case does not parse: {e}"))
                })?,
            };
            for verdict in execution.verdicts.iter().filter(|v| v.is_finding()) {
                let isolated = isolated_case(&case, verdict, &execution.outcome);
                let hit = Hit {
                    verdict,
                    case: &case,
                    bytes: input.bytes(),
                    isolated: isolated.as_ref(),
                    modes: &execution.modes,
                    tensorflow: execution.tensorflow.clone(),
                    versions: &execution.versions,
                    backend: execution.backend,
                    compared_with: execution.compared_with,
                };
                let recorded = self.store.record(&hit).map_err(|e| {
                    Error::os_error(
                        e,
                        format!("cannot record the finding {}", verdict.signature),
                    )
                })?;
                if let Some(finding) = recorded {
                    new = true;
                    tracing::info!(dir = %finding.dir.display(), "{}", finding.line);
                    if self.announce {
                        println!("[semfuzz] {}", finding.line);
                        println!("  Reproduce with: {}", finding.reproduce);
                        println!(
                            "  Minimize with: semfuzz triage --minimize {}",
                            finding.dir.display()
                        );
                    }
                }
            }
        }
        Ok(new)
    }
}
