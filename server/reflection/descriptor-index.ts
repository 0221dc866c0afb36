import { createRegistry, type DescFile, type DescService, type Registry } from "@bufbuild/protobuf";
import { nestedTypes } from "@bufbuild/protobuf/reflect";

/**
 * What server reflection can be asked about: the hosted services, every file they are
 * defined in and every file those import (transitively), and every symbol in those files.
 */
export interface DescriptorIndex {
  /** Fully qualified names of the hosted services, sorted. */
  readonly serviceNames: readonly string[];
  /** A file by its name as imports spell it, e.g. "team/v1/records.proto". */
  fileByName(name: string): DescFile | undefined;
  /**
   * The file that defines a fully qualified symbol: a service, method, message, field,
   * oneof, enum, enum value or extension (what grpcurl and buf curl ask for).
   */
  fileContainingSymbol(symbol: string): DescFile | undefined;
  /** The file that defines extension `number` of message `extendee`. */
  fileContainingExtension(extendee: string, number: number): DescFile | undefined;
  /** The extension numbers known for message `extendee`; undefined for an unknown message. */
  extensionNumbersOf(extendee: string): number[] | undefined;
}

/**
 * Indexes the files of `services`, the `extraFiles` (types no service refers to, such as
 * error details), and their transitive imports.
 */
export function createDescriptorIndex(
  services: Iterable<DescService>,
  extraFiles: Iterable<DescFile> = [],
): DescriptorIndex {
  const hosted = new Map<string, DescService>();
  for (const service of services) hosted.set(service.typeName, service);

  const files = new Map<string, DescFile>();
  const addFile = (file: DescFile): void => {
    if (files.has(file.proto.name)) return;
    files.set(file.proto.name, file);
    for (const dependency of file.dependencies) addFile(dependency);
  };
  for (const service of hosted.values()) addFile(service.file);
  for (const file of extraFiles) addFile(file);

  const symbols = new Map<string, DescFile>();
  for (const file of files.values()) {
    for (const symbol of symbolsOf(file)) symbols.set(symbol, file);
  }
  const registry: Registry = createRegistry(...files.values());

  return {
    serviceNames: [...hosted.keys()].sort(),
    fileByName: (name) => files.get(name),
    fileContainingSymbol: (symbol) => symbols.get(symbol),
    fileContainingExtension(extendee, number) {
      const message = registry.getMessage(extendee);
      return message && registry.getExtensionFor(message, number)?.file;
    },
    extensionNumbersOf(extendee) {
      if (!registry.getMessage(extendee)) return undefined;
      const numbers: number[] = [];
      for (const desc of registry) {
        if (desc.kind === "extension" && desc.extendee.typeName === extendee) {
          numbers.push(desc.number);
        }
      }
      return numbers.sort((a, b) => a - b);
    },
  };
}

/**
 * Every fully qualified name a file defines. Types come from nestedTypes(); their members
 * (methods, fields, oneofs, enum values) are named here. Enum values are scoped like C++
 * enumerators: as siblings of their enum, not children ("team.v1.MEMBER_ROLE_LEAD").
 */
function* symbolsOf(file: DescFile): Iterable<string> {
  for (const desc of nestedTypes(file)) {
    yield desc.typeName;
    switch (desc.kind) {
      case "service":
        for (const method of desc.methods) yield `${desc.typeName}.${method.name}`;
        break;
      case "message":
        for (const field of desc.fields) yield `${desc.typeName}.${field.name}`;
        for (const oneof of desc.oneofs) yield `${desc.typeName}.${oneof.name}`;
        break;
      case "enum": {
        const scope = desc.typeName.slice(0, desc.typeName.length - desc.name.length);
        for (const value of desc.values) yield `${scope}${value.name}`;
        break;
      }
      case "extension":
        break;
    }
  }
}
