/// `Model.detectAll`: a batch of inputs through several detectors of one model at once, with
/// the results in input order (Swift concurrency; not in Embedded Swift builds).

#if !hasFeature(Embedded)
import Synchronization
import YOLOCore
import YOLOEngine

extension Model {
    /// Runs `body(detector, input)` for every input on `sessions` detectors of this model at
    /// once (default: one per core, one thread each; fewer when there are fewer inputs, the cores
    /// then shared among them), each input on whichever detector is free, and returns the
    /// results in input order: `result[i]` is what `body` returned for `inputs[i]`.
    ///
    /// `body` runs on the detectors' tasks, so work put there (loading the image from its path,
    /// say) is done in parallel too, and only `sessions` inputs are in work at a time. The first
    /// error thrown (by `body`, or making a detector) cancels the rest and is rethrown; so is
    /// the cancellation of the calling task (`CancellationError`).
    ///
    ///     let results = try await model.detectAll(paths, classNames: names) { detector, path in
    ///         let photo = try loadImage(path: path)
    ///         return try detector.detect(rgb: photo.pixels, width: photo.width, height: photo.height)
    ///     }
    public func detectAll<Input: Sendable, Output: Sendable>(
        _ inputs: [Input], classNames: [String] = [], options: DetectorOptions = DetectorOptions(),
        sessions: Int? = nil, _ body: @escaping @Sendable (Detector, Input) throws -> Output
    ) async throws -> [Output] {
        if let sessions, sessions < 1 {
            throw YOLOError.invalidArgument("detectAll: sessions \(sessions): expected 1 or more")
        }
        let workers = min(sessions ?? availableCores(), inputs.count)
        guard workers > 0 else { return [] }
        let threads = max(1, availableCores() / workers)
        let next = NextIndex()
        return try await withThrowingTaskGroup(of: [(Int, Output)].self) { group in
            for _ in 0..<workers {
                group.addTask {
                    let detector = try Detector(model: self, classNames: classNames, options: options, threads: threads)
                    var done: [(Int, Output)] = []
                    while true {
                        try Task.checkCancellation()
                        let i = next.take()
                        guard i < inputs.count else { return done }
                        done.append((i, try body(detector, inputs[i])))
                    }
                }
            }
            var results = [Output?](repeating: nil, count: inputs.count)
            for try await part in group {
                for (i, output) in part { results[i] = output }
            }
            return results.map { $0! }  // every index was taken once, by a worker that returned
        }
    }
}

/// The next input a worker of `detectAll` takes (each index exactly once).
private final class NextIndex: Sendable {
    private let counter = Atomic<Int>(0)
    func take() -> Int { counter.add(1, ordering: .relaxed).oldValue }
}
#endif
