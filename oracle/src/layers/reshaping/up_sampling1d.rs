//! `keras.layers.UpSampling1D`: repeats each step `size` times (`ops.repeat` on axis 1).

use crate::layers::reshaping::{Interpolation, UpSampleSpec, positive, strict_int};
use crate::layers::{CallSite, LayerKind, ParamDef, SIZE, Spec};
use crate::params::{Config, DataFormat, ParamResult};

pub struct UpSampling1D;

impl LayerKind for UpSampling1D {
    fn class_name(&self) -> &'static str {
        "UpSampling1D"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        let size = strict_int(&c, "size", Some(2))?;
        c.finish()?;
        Ok(Box::new(UpSampleSpec {
            format: DataFormat::ChannelsLast,
            size: positive("size", &[size])?,
            interpolation: Interpolation::Nearest,
            dtype: call.dtype,
        }))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[ParamDef::Int {
            name: "size",
            min: 1,
            max: 4,
            edges: &[1],
            domain: SIZE,
        }]
    }
}
