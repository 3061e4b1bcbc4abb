import YOLOCore

/// Keys a cfg may carry that do not change inference results: training, augmentation and loss
/// options. Every other key of a section must be read by the layer built from it; one that is
/// not is an error naming its file, line and key (a misspelt or unsupported option would
/// otherwise change nothing, silently).
enum NoEffectKeys {
    /// Keys with no effect at inference in any section.
    static let anySection: Set<String> = [
        "stopbackward", "dont_update", "burnin_update", "train_only_bn", "learning_rate",
    ]

    static let net: Set<String> = [
        // optimisation
        "batch", "subdivisions", "momentum", "decay", "learning_rate", "burn_in", "max_batches", "policy",
        "steps", "scales", "step", "gamma", "power", "adam", "B1", "B2", "eps", "loss_scale", "try_fix_nan",
        "sequential_subdivisions", "dynamic_minibatch", "ema_alpha", "label_smooth_eps", "max_chart_loss",
        "seq_scales", "time_steps", "track", "augment_speed", "burnin_update", "rgen",
        // augmentation
        "angle", "saturation", "exposure", "hue", "aspect", "min_crop", "max_crop", "flip", "mosaic",
        "mosaic_bound", "cutmix", "mixup", "blur", "gaussian_noise", "jitter", "adversarial_lr", "attention",
        "contrastive", "contrastive_jit_flip", "contrastive_color", "unsupervised",
        // memory and GPU settings of Darknet itself
        "optimized_memory", "workspace_size_limit_MB", "use_cuda_graph",
    ]

    static let yolo: Set<String> = [
        "jitter", "ignore_thresh", "truth_thresh", "iou_thresh", "iou_thresh_kind", "random", "resize",
        "iou_normalizer", "cls_normalizer", "obj_normalizer", "delta_normalizer", "uc_normalizer", "iou_loss",
        "max_delta", "counters_per_class", "label_smooth_eps", "focal_loss", "objectness_smooth", "max", "map",
        "rewritten_bbox", "show_details", "track_history_size", "sim_thresh", "dets_for_track",
        "dets_for_show", "track_ciou_norm", "embedding_layer",
    ]

    /// [region]'s training keys (pjreddie's region layer reads them for its loss only).
    static let region: Set<String> = [
        "jitter", "rescore", "object_scale", "noobject_scale", "class_scale", "coord_scale", "bias_match",
        "absolute", "thresh", "random", "max", "log", "sqrt",
    ]

    /// The no-effect keys of a section named `section`.
    static func keys(for section: String) -> Set<String> {
        switch section {
        case "net", "network": return anySection.union(net)
        case "yolo": return anySection.union(yolo)
        case "region": return anySection.union(region)
        default: return anySection
        }
    }

    /// Throws when `section` holds a key that was neither read nor is on its no-effect list.
    static func check(_ section: DarknetConfig.Section) throws(YOLOError) {
        guard let o = section.unreadOption(noEffect: keys(for: section.name)) else { return }
        throw .cfg(file: section.file, line: o.line,
                   message: "[\(section.name)] unknown key '\(o.key)': it is not used by this engine's [\(section.name)] and not an option without effect at inference (training, augmentation); remove it or check its spelling")
    }
}
