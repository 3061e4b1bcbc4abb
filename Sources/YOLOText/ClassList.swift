// Class lists as users write them (`--classes person,car`, `classes=person,car`): names from
// the names file (any case) or indices, comma-separated, to the class indices of a model.
import Foundation

/// A class list that names no class of the model; `description` is the whole message.
public struct ClassListError: Error, CustomStringConvertible, Sendable {
    public let description: String
}

/// The class indices of `list`: each comma-separated item is a name from `names` (matched
/// exactly, else ignoring case) or an index in 0..<classCount. `option` names the list in
/// errors (e.g. "--classes").
public func parseClassList(_ list: String, names allNames: [String], classCount: Int,
                           option: String) throws(ClassListError) -> Set<Int> {
    let names = Array(allNames.prefix(classCount))
    var filter = Set<Int>()
    for item in list.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !item.isEmpty {
        let lower = item.lowercased()
        if let k = names.firstIndex(of: item) ?? names.firstIndex(where: { $0.lowercased() == lower })
            ?? Int(item).flatMap({ (0..<classCount).contains($0) ? $0 : nil }) {
            filter.insert(k)
        } else {
            throw ClassListError(description: "\(option): '\(item)' is not a class name of this model (nor an index in 0..<\(classCount)); names: \(names.joined(separator: ","))")
        }
    }
    guard !filter.isEmpty else { throw ClassListError(description: "\(option) needs at least one class name") }
    return filter
}
