import YOLOCore
import YOLOKernels
extension Activation {
    init(name: String, section: DarknetConfig.Section) throws(YOLOError) {
        guard let a = Activation(rawValue: name) else {
            throw section.error("activation=\(name) is not supported (supported: \(Activation.allCases.map { $0.rawValue }.joined(separator: ", ")))",
                                line: section.options.last { $0.key == "activation" }?.line)
        }
        self = a
    }
}
