//! `keras.layers.Dense`: `activation(x @ kernel + bias)` over the last axis.

use ndarray::{ArrayD, Ix2, IxDyn};

use crate::DType;
use crate::activations::Activation;
use crate::case::Dims;
use crate::interval::Interval;
use crate::layers::util::{arity, rank_between};
use crate::layers::{CallSite, LayerKind, ParamDef, SIZE, Spec, WeightDomain, WeightSpec};
use crate::params::{Config, ParamResult};
use crate::tolerance::Tolerance;
use crate::violation::{Category, Tag, Violation, badness};

pub struct Dense;

#[derive(Debug)]
struct DenseSpec {
    units: usize,
    activation: Activation,
    use_bias: bool,
    dtype: DType,
}

impl LayerKind for Dense {
    fn class_name(&self) -> &'static str {
        "Dense"
    }

    fn parse(&self, call: &CallSite<'_>) -> ParamResult<Box<dyn Spec>> {
        let c = Config::new(call.config);
        let units = c.i64_req("units")?;
        if units <= 0 {
            return Err(
                Violation::new(Category::IllegalArgument, Tag::KerasEnforced)
                    .parameter("units")
                    .actual(units)
                    .expected("a positive integer")
                    .code("argument.not-positive")
                    .detail("is not positive")
                    .badness(badness::argument(1.0 - units as f64))
                    .into(),
            );
        }
        let activation = Activation::parse("activation", c.raw("activation"))?;
        let use_bias = c.bool_or("use_bias", true)?;
        c.ignore(&["lora_rank", "lora_alpha"]);
        if call.config.get("lora_rank").is_some_and(|v| !v.is_null()) {
            return Err(crate::violation::Unsupported::new("lora_rank", "LoRA adapters").into());
        }
        c.finish()?;
        Ok(Box::new(DenseSpec {
            units: units as usize,
            activation,
            use_bias,
            dtype: call.dtype,
        }))
    }

    fn params(&self) -> &'static [ParamDef] {
        &[
            ParamDef::Int {
                name: "units",
                min: 1,
                max: 16,
                edges: &[1],
                domain: SIZE,
            },
            ParamDef::Activation { name: "activation" },
            ParamDef::Bool { name: "use_bias" },
        ]
    }
}

impl Spec for DenseSpec {
    fn compute_mask(
        &self,
        _inputs: &[&ArrayD<f64>],
        masks: &[Option<&crate::layers::Mask>],
    ) -> Option<Vec<Option<crate::layers::Mask>>> {
        crate::layers::util::keep_mask(masks)
    }

    fn infer(&self, inputs: &[Dims]) -> Result<Vec<Dims>, Violation> {
        arity(inputs, 1)?;
        rank_between(&inputs[0], 0, 2, usize::MAX)?;
        // Keras sizes the kernel from the last axis when it builds the layer.
        if inputs[0].last().copied().flatten().is_none() {
            return Err(
                Violation::new(Category::ImproperArgument, Tag::KerasEnforced)
                    .parameter("input[0]")
                    .actual(crate::layers::util::show(&inputs[0]))
                    .expected("a known last axis")
                    .detail("has an undefined feature size (the kernel's shape would be undefined)")
                    .badness(badness::argument(1.0)),
            );
        }
        let mut out = inputs[0].clone();
        *out.last_mut().expect("rank >= 2") = Some(self.units);
        Ok(vec![out])
    }

    fn weights(&self, inputs: &[Vec<usize>]) -> Vec<WeightSpec> {
        let n = *inputs[0].last().expect("rank >= 2");
        let mut w = vec![WeightSpec {
            name: "kernel",
            shape: vec![n, self.units],
            domain: WeightDomain::Any,
        }];
        if self.use_bias {
            w.push(WeightSpec {
                name: "bias",
                shape: vec![self.units],
                domain: WeightDomain::Any,
            });
        }
        w
    }

    fn eval(&self, inputs: &[&ArrayD<f64>], weights: &[&ArrayD<f64>]) -> Vec<ArrayD<f64>> {
        let y = self.affine(inputs[0], weights[0], self.bias(weights));
        vec![self.activation.apply_in(&y, self.dtype)]
    }

    fn intervals(
        &self,
        shapes: &[Dims],
        inputs: &[Interval],
        weights: &[Interval],
    ) -> Vec<Interval> {
        let fan_in = shapes[0].last().copied().flatten();
        let mut pre = match (fan_in, inputs.first(), weights.first()) {
            (Some(n), Some(x), Some(k)) => (*x * *k).sum_of(n),
            _ => Interval::TOP,
        };
        if self.use_bias
            && let Some(b) = weights.get(1)
        {
            pre = pre + *b;
        }
        vec![self.activation.interval(pre)]
    }

    fn tolerance(
        &self,
        dtype: DType,
        inputs: &[&ArrayD<f64>],
        weights: &[&ArrayD<f64>],
    ) -> Tolerance {
        let n = inputs[0].shape().last().copied().unwrap_or(1);
        let max_abs = |a: &ArrayD<f64>| a.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let mut magnitude = n as f64 * max_abs(inputs[0]) * max_abs(weights[0]);
        if self.use_bias {
            magnitude += max_abs(weights[1]);
        }
        Tolerance::reduction(dtype, n + 1, magnitude).after(self.activation, dtype)
    }

    fn order_dependent_overflow(
        &self,
        inputs: &[&ArrayD<f64>],
        weights: &[&ArrayD<f64>],
    ) -> Option<Vec<ArrayD<bool>>> {
        let n = inputs[0].shape().last().copied().unwrap_or(1);
        crate::layers::util::order_decides_sum_overflow(
            self.dtype,
            n,
            inputs[0],
            weights[0],
            self.bias(weights),
            |x, k, b| self.affine(x, k, b),
        )
    }

    fn build_config(&self, inputs: &[Dims]) -> Option<serde_json::Value> {
        crate::layers::util::input_shape_config(inputs)
    }
}

impl DenseSpec {
    fn bias<'a>(&self, weights: &[&'a ArrayD<f64>]) -> Option<&'a ArrayD<f64>> {
        self.use_bias.then(|| weights[1])
    }

    /// `x @ kernel + bias`, before the activation.
    fn affine(
        &self,
        x: &ArrayD<f64>,
        kernel: &ArrayD<f64>,
        bias: Option<&ArrayD<f64>>,
    ) -> ArrayD<f64> {
        let n = *x.shape().last().expect("rank >= 2");
        let rows: usize = x.shape()[..x.ndim() - 1].iter().product();
        let x2 = x.to_shape((rows, n)).expect("contiguous reshape");
        let k = kernel
            .view()
            .into_dimensionality::<Ix2>()
            .expect("kernel is 2-D");
        let mut y = x2.dot(&k);
        if let Some(b) = bias {
            y += &b
                .view()
                .into_dimensionality::<ndarray::Ix1>()
                .expect("bias is 1-D");
        }
        let mut shape = x.shape().to_vec();
        *shape.last_mut().expect("rank >= 2") = self.units;
        y.into_shape_with_order(IxDyn(&shape))
            .expect("same element count")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Node;

    /// Keras builds the kernel from the input's last axis: an undefined one (a merge that
    /// broadcast a batch axis into it, then Flatten) is refused, as TF and PyTorch refuse it.
    #[test]
    fn an_undefined_last_axis_is_refused() {
        let config = serde_json::json!({"name": "d", "units": 2})
            .as_object()
            .unwrap()
            .clone();
        let node = Node::default();
        let spec = Dense
            .parse(&CallSite {
                config: &config,
                node: &node,
                dtype: DType::Float32,
            })
            .unwrap();
        assert!(spec.infer(&[vec![None, None]]).is_err());
        assert_eq!(
            spec.infer(&[vec![None, Some(3)]]).unwrap(),
            vec![vec![None, Some(2)]]
        );
    }

    #[test]
    fn a_dot_product_that_overflows_in_some_order_only_is_flagged() {
        let config = serde_json::json!({"name": "d", "units": 1})
            .as_object()
            .unwrap()
            .clone();
        let node = Node::default();
        let spec = Dense
            .parse(&CallSite {
                config: &config,
                node: &node,
                dtype: DType::Float64,
            })
            .unwrap();
        let kernel = ArrayD::from_elem(IxDyn(&[3, 1]), 1.0);
        let bias = ArrayD::from_elem(IxDyn(&[1]), 0.0);
        let flags = |x: [f64; 3]| {
            let x = ArrayD::from_shape_vec(IxDyn(&[1, 3]), x.to_vec()).unwrap();
            spec.order_dependent_overflow(&[&x], &[&kernel, &bias])
                .map(|f| f[0].iter().copied().collect::<Vec<_>>())
        };
        assert_eq!(flags([1e308, 1e308, -1.5e308]), Some(vec![true]));
        assert_eq!(flags([1e308, -1e308, 0.5e308]), None);
        assert_eq!(flags([1.0, 2.0, 3.0]), None);
        // One product past the range on its own, with the other sign's sum small: +inf in
        // every order.
        let big = ArrayD::from_elem(IxDyn(&[3, 1]), 1e4);
        let x = ArrayD::from_shape_vec(IxDyn(&[1, 3]), vec![f64::MAX, -1.0, 2.0]).unwrap();
        assert_eq!(spec.order_dependent_overflow(&[&x], &[&big, &bias]), None);
        // Both signs' sums past the range (each product alone), the exact sum unknown: some
        // orders reach +inf, others -inf, and the two products' infinities meet as NaN, which
        // TF gave (a campaign's float64 Dense, whose sparse_sigmoid made the reference's -inf
        // a 0).
        let x = ArrayD::from_shape_vec(IxDyn(&[1, 3]), vec![f64::MAX, -f64::MAX, 2.0]).unwrap();
        let both = spec.order_dependent_overflow(&[&x], &[&big, &bias]);
        assert_eq!(
            both.map(|f| f[0].iter().copied().collect::<Vec<_>>()),
            Some(vec![true])
        );
        // An infinite bias is an infinite term: +inf in every order where only the positive
        // products may overflow; NaN or +inf, by the order, where the negative ones may.
        let inf_bias = ArrayD::from_elem(IxDyn(&[1]), f64::INFINITY);
        let with_bias = |x: [f64; 3]| {
            let x = ArrayD::from_shape_vec(IxDyn(&[1, 3]), x.to_vec()).unwrap();
            spec.order_dependent_overflow(&[&x], &[&kernel, &inf_bias])
                .map(|f| f[0].iter().copied().collect::<Vec<_>>())
        };
        assert_eq!(with_bias([1e308, 1e308, -1.5e308]), None);
        assert_eq!(with_bias([-1e308, -1e308, 1.5e308]), Some(vec![true]));
        assert_eq!(with_bias([1.0, 2.0, 3.0]), None);
    }
}
