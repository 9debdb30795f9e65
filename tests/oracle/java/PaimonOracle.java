/*
 * Java Paimon as an interop oracle for pyspark-paimon's tests.
 *
 * Compiled at test time against the Paimon bundle jar that ships in the PyPI package paimon-python-ali
 * (tests/oracle/requirements.txt) and driven by tests/oracle/java_oracle.py. It is a long-lived process:
 * every line on stdin is one JSON command, every line on stdout is its JSON result, in order. Anything the
 * libraries print goes to stderr (System.out is pointed there at start), so stdout stays the protocol channel.
 *
 * A result is the command's JSON object, or {"error": "...", "trace": "..."} when it failed; the process
 * keeps serving after a failed command. Every command except "versions" takes "warehouse" (the directory
 * of a filesystem catalog) and "identifier" ("db.t"). The commands and their arguments are listed in
 * tests/oracle/java_oracle.py.
 *
 * Values travel as JSON: integers and floating point as numbers, BOOLEAN as true/false, CHAR/VARCHAR as
 * strings, DECIMAL as its plain string, DATE as yyyy-MM-dd, TIME as HH:mm:ss[.fff], TIMESTAMP and
 * TIMESTAMP WITH LOCAL TIME ZONE as yyyy-MM-ddTHH:mm:ss.nnnnnnnnn (the local-zoned one in UTC), BINARY and
 * VARBINARY as lower-case hex, ARRAY as a list, MAP as a list of [key, value] pairs, ROW as an object.
 */

import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericArray;
import org.apache.paimon.data.GenericMap;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalArray;
import org.apache.paimon.data.InternalMap;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.options.Options;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.schema.SchemaChange;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.Snapshot;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.table.source.StreamTableScan;
import org.apache.paimon.table.source.TableRead;
import org.apache.paimon.table.source.TableScan;
import org.apache.paimon.types.ArrayType;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeJsonParser;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.DecimalType;
import org.apache.paimon.types.MapType;
import org.apache.paimon.types.MultisetType;
import org.apache.paimon.types.RowKind;
import org.apache.paimon.types.RowType;
import org.apache.paimon.utils.JsonSerdeUtil;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.charset.StandardCharsets;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

public final class PaimonOracle {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Map<String, Catalog> CATALOGS = new HashMap<>();
    /** Spill and lookup files of writers (first-row, deletion vectors and lookup compaction need one). */
    private static IOManager ioManager;

    /** A malformed command: the message names the offending key. */
    static final class UsageError extends RuntimeException {
        private static final long serialVersionUID = 1L;

        UsageError(String message) {
            super(message);
        }
    }

    public static void main(String[] args) throws Exception {
        PrintStream protocol = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        System.setOut(System.err);
        ioManager = IOManager.create(Files.createTempDirectory("paimon-java-oracle-io-").toString());
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            ObjectNode result;
            try {
                result = dispatch(JSON.readTree(line));
            } catch (Throwable error) {
                StringWriter trace = new StringWriter();
                error.printStackTrace(new PrintWriter(trace));
                result = JSON.createObjectNode();
                result.put("error", error.toString());
                result.put("trace", trace.toString());
            }
            protocol.println(JSON.writeValueAsString(result));
        }
        for (Catalog catalog : CATALOGS.values()) {
            catalog.close();
        }
        ioManager.close();
    }

    private static ObjectNode dispatch(JsonNode cmd) throws Exception {
        String name = text(cmd, "cmd");
        switch (name) {
            case "versions": return versions();
            case "create": return create(cmd);
            case "write": return write(cmd);
            case "read": return read(cmd);
            case "compact": return compact(cmd);
            case "files": return files(cmd);
            case "evolve": return evolve(cmd);
            case "tag": return tag(cmd);
            case "snapshots": return snapshots(cmd);
            case "write_dynamic": return writeDynamic(cmd);
            case "stream": return stream(cmd);
            case "write_cross_partition": return writeCrossPartition(cmd);
            case "file_index_bytes": return fileIndexBytes(cmd);
            case "file_index_probe": return fileIndexProbe(cmd);
            case "file_index_container": return fileIndexContainer(cmd);
            case "file_index_verdicts": return fileIndexVerdicts(cmd);
            default:
                throw new UsageError("'cmd' must be one of versions, create, write, read, compact, files, "
                        + "evolve, tag, snapshots, write_dynamic, stream, write_cross_partition, "
                        + "file_index_bytes, file_index_probe, file_index_container, file_index_verdicts; got '"
                        + name + "'");
        }
    }

    // ------------------------------------------------------------------------------------ catalog, tables

    private static Catalog catalog(JsonNode cmd) {
        String warehouse = text(cmd, "warehouse");
        return CATALOGS.computeIfAbsent(warehouse, w -> {
            Options options = new Options();
            options.set("warehouse", w);
            // Other writers (our library) change the tables between commands: never serve a cached table.
            options.set("cache-enabled", "false");
            return CatalogFactory.createCatalog(CatalogContext.create(options));
        });
    }

    private static Identifier identifier(JsonNode cmd) {
        return Identifier.fromString(text(cmd, "identifier"));
    }

    private static Table table(JsonNode cmd) throws Exception {
        Table table = catalog(cmd).getTable(identifier(cmd));
        JsonNode options = cmd.get("options");
        if (options != null && options.size() > 0) {
            table = table.copy(stringMap(options));
        }
        return table;
    }

    private static BatchTableWrite newWrite(BatchWriteBuilder builder) {
        BatchTableWrite write = builder.newWrite();
        write.withIOManager(ioManager);
        return write;
    }

    private static long latestSnapshotId(JsonNode cmd) throws Exception {
        return catalog(cmd).getTable(identifier(cmd)).latestSnapshotId().orElse(-1L);
    }

    // ------------------------------------------------------------------------------------------ commands

    private static ObjectNode versions() throws Exception {
        ObjectNode out = JSON.createObjectNode();
        Properties pom = new Properties();
        try (InputStream stream = PaimonOracle.class.getClassLoader().getResourceAsStream(
                "META-INF/maven/org.apache.paimon/paimon-bundle/pom.properties")) {
            if (stream != null) {
                pom.load(stream);
            }
        }
        out.put("paimon", pom.getProperty("version", "unknown"));
        out.put("java", System.getProperty("java.version"));
        return out;
    }

    /** {columns: [[name, type, nullable?]], partition_keys?, primary_keys?, options?, comment?}. */
    private static ObjectNode create(JsonNode cmd) throws Exception {
        Schema.Builder builder = Schema.newBuilder();
        for (JsonNode column : required(cmd, "columns")) {
            DataType type = parseType(column.get(1).asText());
            if (column.size() > 2 && !column.get(2).asBoolean()) {
                type = type.copy(false);
            }
            builder.column(column.get(0).asText(), type);
        }
        builder.partitionKeys(stringList(cmd.get("partition_keys")));
        builder.primaryKey(stringList(cmd.get("primary_keys")));
        builder.options(stringMap(cmd.get("options")));
        if (cmd.hasNonNull("comment")) {
            builder.comment(cmd.get("comment").asText());
        }
        Identifier id = identifier(cmd);
        catalog(cmd).createDatabase(id.getDatabaseName(), true);
        catalog(cmd).createTable(id, builder.build(), false);
        return JSON.createObjectNode();
    }

    /** One commit: {rows: [[...] | {...}], kinds?: ["+I"|"-U"|"+U"|"-D"], overwrite?: true | {partition}}. */
    private static ObjectNode write(JsonNode cmd) throws Exception {
        Table table = table(cmd);
        RowType rowType = table.rowType();
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        JsonNode overwrite = cmd.get("overwrite");
        if (overwrite != null && overwrite.isObject()) {
            builder = builder.withOverwrite(stringMap(overwrite));
        } else if (overwrite != null && overwrite.asBoolean()) {
            builder = builder.withOverwrite();
        }
        JsonNode rows = required(cmd, "rows");
        JsonNode kinds = cmd.get("kinds");
        if (kinds != null && kinds.size() != rows.size()) {
            throw new UsageError("'kinds' has " + kinds.size() + " entries for " + rows.size() + " rows");
        }
        try (BatchTableWrite write = newWrite(builder); BatchTableCommit commit = builder.newCommit()) {
            for (int i = 0; i < rows.size(); i++) {
                GenericRow row = toRow(rows.get(i), rowType);
                if (kinds != null) {
                    row.setRowKind(RowKind.fromShortString(kinds.get(i).asText()));
                }
                write.write(row);
            }
            commit.commit(write.prepareCommit());
        }
        ObjectNode out = JSON.createObjectNode();
        out.put("snapshot_id", latestSnapshotId(cmd));
        return out;
    }

    /** {options?: dynamic read options} -> {fields: [[name, type JSON]], rows: [[...]], kinds: [...]}. */
    private static ObjectNode read(JsonNode cmd) throws Exception {
        Table table = table(cmd);
        RowType rowType = table.rowType();
        ReadBuilder builder = table.newReadBuilder();
        ArrayNode rows = JSON.createArrayNode();
        ArrayNode kinds = JSON.createArrayNode();
        try (RecordReader<InternalRow> reader = builder.newRead().createReader(builder.newScan().plan())) {
            reader.forEachRemaining(row -> {
                rows.add(rowToJson(row, rowType));
                kinds.add(row.getRowKind().shortString());
            });
        }
        ObjectNode out = JSON.createObjectNode();
        out.set("fields", fieldsJson(rowType));
        out.set("rows", rows);
        out.set("kinds", kinds);
        return out;
    }

    /** Full compaction of every (partition, bucket) that holds files, in one commit. */
    private static ObjectNode compact(JsonNode cmd) throws Exception {
        Table table = table(cmd);
        Set<Map.Entry<BinaryRow, Integer>> targets = new LinkedHashSet<>();
        for (Split split : table.newReadBuilder().newScan().plan().splits()) {
            DataSplit data = (DataSplit) split;
            targets.add(Map.entry(data.partition(), data.bucket()));
        }
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        try (BatchTableWrite write = newWrite(builder); BatchTableCommit commit = builder.newCommit()) {
            for (Map.Entry<BinaryRow, Integer> target : targets) {
                write.compact(target.getKey(), target.getValue(), true);
            }
            commit.commit(write.prepareCommit());
        }
        ObjectNode out = JSON.createObjectNode();
        out.put("snapshot_id", latestSnapshotId(cmd));
        out.put("compacted_buckets", targets.size());
        return out;
    }

    /**
     * The data files Java plans for a read: [{bucket, level, file, row_count, deletion_file, extra_files,
     * embedded_index (hex or null)}].
     */
    private static ObjectNode files(JsonNode cmd) throws Exception {
        ArrayNode files = JSON.createArrayNode();
        for (Split split : table(cmd).newReadBuilder().newScan().plan().splits()) {
            DataSplit data = (DataSplit) split;
            List<DataFileMeta> metas = data.dataFiles();
            for (int i = 0; i < metas.size(); i++) {
                ObjectNode file = files.addObject();
                file.put("bucket", data.bucket());
                file.put("level", metas.get(i).level());
                file.put("file", metas.get(i).fileName());
                file.put("row_count", metas.get(i).rowCount());
                boolean hasDeletionFile = data.deletionFiles().isPresent()
                        && data.deletionFiles().get().get(i) != null;
                file.put("deletion_file", hasDeletionFile);
                ArrayNode extras = file.putArray("extra_files");
                for (String extra : metas.get(i).extraFiles()) {
                    extras.add(extra);
                }
                byte[] embedded = metas.get(i).embeddedIndex();
                file.put("embedded_index", embedded == null ? null : bytesToHex(embedded));
            }
        }
        ObjectNode out = JSON.createObjectNode();
        out.set("files", files);
        return out;
    }

    /** {changes: [{op: add_column|rename_column|drop_column|update_column_type|set_option|remove_option}]}. */
    private static ObjectNode evolve(JsonNode cmd) throws Exception {
        List<SchemaChange> changes = new ArrayList<>();
        for (JsonNode change : required(cmd, "changes")) {
            String op = text(change, "op");
            switch (op) {
                case "add_column":
                    SchemaChange.Move move = null;
                    if (change.path("first").asBoolean()) {
                        move = SchemaChange.Move.first(text(change, "name"));
                    } else if (change.hasNonNull("after")) {
                        move = SchemaChange.Move.after(text(change, "name"), text(change, "after"));
                    }
                    changes.add(SchemaChange.addColumn(text(change, "name"), parseType(text(change, "type")),
                            change.hasNonNull("comment") ? change.get("comment").asText() : null, move));
                    break;
                case "rename_column":
                    changes.add(SchemaChange.renameColumn(text(change, "name"), text(change, "new_name")));
                    break;
                case "drop_column":
                    changes.add(SchemaChange.dropColumn(text(change, "name")));
                    break;
                case "update_column_type":
                    changes.add(SchemaChange.updateColumnType(text(change, "name"), parseType(text(change, "type"))));
                    break;
                case "set_option":
                    changes.add(SchemaChange.setOption(text(change, "key"), text(change, "value")));
                    break;
                case "remove_option":
                    changes.add(SchemaChange.removeOption(text(change, "key")));
                    break;
                default:
                    throw new UsageError("change op '" + op + "' is not one of add_column, rename_column, "
                            + "drop_column, update_column_type, set_option, remove_option");
            }
        }
        catalog(cmd).alterTable(identifier(cmd), changes, false);
        ObjectNode out = JSON.createObjectNode();
        out.put("schema_id", ((FileStoreTable) table(cmd)).schema().id());
        return out;
    }

    /** {name, snapshot_id?} (default: the latest snapshot) -> {snapshot_id}. */
    private static ObjectNode tag(JsonNode cmd) throws Exception {
        Table table = table(cmd);
        long snapshotId = cmd.hasNonNull("snapshot_id") ? cmd.get("snapshot_id").asLong()
                : table.latestSnapshotId().orElseThrow(() -> new UsageError("the table has no snapshot to tag"));
        table.createTag(text(cmd, "name"), snapshotId);
        ObjectNode out = JSON.createObjectNode();
        out.put("snapshot_id", snapshotId);
        return out;
    }

    /** -> {snapshots: [{id, commit_kind, schema_id, total_record_count}]}. */
    private static ObjectNode snapshots(JsonNode cmd) throws Exception {
        ArrayNode list = JSON.createArrayNode();
        Iterator<Snapshot> it = ((FileStoreTable) table(cmd)).snapshotManager().snapshots();
        while (it.hasNext()) {
            Snapshot snapshot = it.next();
            ObjectNode node = list.addObject();
            node.put("id", snapshot.id());
            node.put("commit_kind", snapshot.commitKind().name());
            node.put("schema_id", snapshot.schemaId());
            node.put("total_record_count", snapshot.totalRecordCount());
        }
        ObjectNode out = JSON.createObjectNode();
        out.set("snapshots", list);
        return out;
    }

    // --------------------------------------------------------------------------------------------- types

    /**
     * A Paimon type string: an atomic type as Paimon spells it ("DECIMAL(10, 2)", "TIMESTAMP(6) WITH LOCAL
     * TIME ZONE", "INT NOT NULL") or ARRAY<t>, MULTISET<t>, MAP<k, v>, ROW<name t, ...> of them.
     */
    static DataType parseType(String spec) {
        String text = spec.trim();
        boolean nullable = true;
        String upper = text.toUpperCase();
        if (upper.endsWith(" NOT NULL")) {
            nullable = false;
            text = text.substring(0, text.length() - " NOT NULL".length()).trim();
            upper = text.toUpperCase();
        }
        for (String kind : new String[] {"ARRAY", "MULTISET", "MAP", "ROW"}) {
            if (upper.startsWith(kind + "<") && text.endsWith(">")) {
                List<String> args = splitTopLevel(text.substring(kind.length() + 1, text.length() - 1));
                DataType type;
                if (kind.equals("ARRAY") && args.size() == 1) {
                    type = DataTypes.ARRAY(parseType(args.get(0)));
                } else if (kind.equals("MULTISET") && args.size() == 1) {
                    type = DataTypes.MULTISET(parseType(args.get(0)));
                } else if (kind.equals("MAP") && args.size() == 2) {
                    type = DataTypes.MAP(parseType(args.get(0)), parseType(args.get(1)));
                } else if (kind.equals("ROW")) {
                    List<DataField> fields = new ArrayList<>();
                    for (String arg : args) {
                        String name;
                        String rest;
                        if (arg.startsWith("`")) {
                            int end = arg.indexOf('`', 1);
                            name = arg.substring(1, end);
                            rest = arg.substring(end + 1);
                        } else {
                            int space = arg.indexOf(' ');
                            name = arg.substring(0, space);
                            rest = arg.substring(space + 1);
                        }
                        // Ids are placeholders: the schema builder and schema changes renumber nested fields.
                        fields.add(DataTypes.FIELD(fields.size(), name, parseType(rest)));
                    }
                    type = DataTypes.ROW(fields.toArray(new DataField[0]));
                } else {
                    throw new UsageError("malformed type '" + spec + "'");
                }
                return type.copy(nullable);
            }
        }
        return DataTypeJsonParser.parseAtomicTypeSQLString(text).copy(nullable);
    }

    private static List<String> splitTopLevel(String text) {
        List<String> parts = new ArrayList<>();
        int depth = 0;
        int start = 0;
        boolean quoted = false;
        for (int i = 0; i < text.length(); i++) {
            char ch = text.charAt(i);
            if (ch == '`') {
                quoted = !quoted;
            } else if (!quoted && (ch == '<' || ch == '(')) {
                depth++;
            } else if (!quoted && (ch == '>' || ch == ')')) {
                depth--;
            } else if (!quoted && depth == 0 && ch == ',') {
                parts.add(text.substring(start, i).trim());
                start = i + 1;
            }
        }
        parts.add(text.substring(start).trim());
        return parts;
    }

    private static ArrayNode fieldsJson(RowType rowType) throws Exception {
        ArrayNode fields = JSON.createArrayNode();
        for (DataField field : rowType.getFields()) {
            ArrayNode pair = fields.addArray();
            pair.add(field.name());
            pair.add(JSON.readTree(JsonSerdeUtil.toJson(field.type())));
        }
        return fields;
    }

    // ------------------------------------------------------------------------------------ JSON -> Paimon

    private static GenericRow toRow(JsonNode node, RowType rowType) {
        List<DataField> fields = rowType.getFields();
        GenericRow row = new GenericRow(fields.size());
        if (node.isArray()) {
            if (node.size() > fields.size()) {
                throw new UsageError("row " + node + " has more values than the " + fields.size() + " columns");
            }
            for (int i = 0; i < node.size(); i++) {
                row.setField(i, toInternal(node.get(i), fields.get(i).type()));
            }
        } else if (node.isObject()) {
            Iterator<String> names = node.fieldNames();
            while (names.hasNext()) {
                String name = names.next();
                int index = rowType.getFieldIndex(name);
                if (index < 0) {
                    throw new UsageError("row " + node + " has unknown column '" + name + "'");
                }
                row.setField(index, toInternal(node.get(name), fields.get(index).type()));
            }
        } else {
            throw new UsageError("a row must be a list or an object, got " + node);
        }
        return row;
    }

    private static Object toInternal(JsonNode value, DataType type) {
        if (value == null || value.isNull()) {
            return null;
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                if (!value.isBoolean()) {
                    throw new UsageError("BOOLEAN value must be true/false, got " + value);
                }
                return value.booleanValue();
            case TINYINT:
                return (byte) integral(value, Byte.MIN_VALUE, Byte.MAX_VALUE);
            case SMALLINT:
                return (short) integral(value, Short.MIN_VALUE, Short.MAX_VALUE);
            case INTEGER:
                return (int) integral(value, Integer.MIN_VALUE, Integer.MAX_VALUE);
            case BIGINT:
                return integral(value, Long.MIN_VALUE, Long.MAX_VALUE);
            case FLOAT:
                return (float) number(value);
            case DOUBLE:
                return number(value);
            case CHAR:
            case VARCHAR:
                return BinaryString.fromString(value.asText());
            case BINARY:
            case VARBINARY:
                return hexToBytes(value.asText());
            case DECIMAL: {
                DecimalType decimal = (DecimalType) type;
                Decimal result = Decimal.fromBigDecimal(new BigDecimal(value.asText()), decimal.getPrecision(),
                        decimal.getScale());
                if (result == null) {
                    throw new UsageError(value + " does not fit " + type);
                }
                return result;
            }
            case DATE:
                return (int) LocalDate.parse(value.asText()).toEpochDay();
            case TIME_WITHOUT_TIME_ZONE:
                return (int) (LocalTime.parse(value.asText()).toNanoOfDay() / 1_000_000L);
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return Timestamp.fromLocalDateTime(LocalDateTime.parse(value.asText().replace(' ', 'T')));
            case ARRAY:
            case MULTISET: {
                DataType element = type instanceof ArrayType ? ((ArrayType) type).getElementType()
                        : ((MultisetType) type).getElementType();
                Object[] items = new Object[value.size()];
                for (int i = 0; i < items.length; i++) {
                    items[i] = toInternal(value.get(i), element);
                }
                return new GenericArray(items);
            }
            case MAP: {
                MapType map = (MapType) type;
                Map<Object, Object> entries = new LinkedHashMap<>();
                if (value.isObject()) {
                    Iterator<String> keys = value.fieldNames();
                    while (keys.hasNext()) {
                        String key = keys.next();
                        entries.put(toInternal(JSON.getNodeFactory().textNode(key), map.getKeyType()),
                                toInternal(value.get(key), map.getValueType()));
                    }
                } else {
                    for (JsonNode pair : value) {
                        entries.put(toInternal(pair.get(0), map.getKeyType()),
                                toInternal(pair.get(1), map.getValueType()));
                    }
                }
                return new GenericMap(entries);
            }
            case ROW:
                return toRow(value, (RowType) type);
            default:
                throw new UsageError("type " + type + " is not supported by the Java oracle");
        }
    }

    private static long integral(JsonNode value, long min, long max) {
        if (!value.isIntegralNumber() || !value.canConvertToLong() || value.longValue() < min
                || value.longValue() > max) {
            throw new UsageError("expected an integer in [" + min + ", " + max + "], got " + value);
        }
        return value.longValue();
    }

    private static double number(JsonNode value) {
        if (value.isNumber()) {
            return value.doubleValue();
        }
        if (value.isTextual()) {  // "NaN", "Infinity", "-Infinity"
            return Double.parseDouble(value.asText());
        }
        throw new UsageError("expected a number, got " + value);
    }

    private static byte[] hexToBytes(String hex) {
        if (hex.length() % 2 != 0) {
            throw new UsageError("hex string of odd length: '" + hex + "'");
        }
        byte[] out = new byte[hex.length() / 2];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
        }
        return out;
    }

    // ------------------------------------------------------------------------------------ Paimon -> JSON

    private static ArrayNode rowToJson(InternalRow row, RowType rowType) {
        ArrayNode out = JSON.createArrayNode();
        List<DataField> fields = rowType.getFields();
        for (int i = 0; i < fields.size(); i++) {
            out.add(toJson(InternalRow.createFieldGetter(fields.get(i).type(), i).getFieldOrNull(row),
                    fields.get(i).type()));
        }
        return out;
    }

    private static JsonNode toJson(Object value, DataType type) {
        if (value == null) {
            return JSON.getNodeFactory().nullNode();
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return JSON.getNodeFactory().booleanNode((Boolean) value);
            case TINYINT:
                return JSON.getNodeFactory().numberNode((Byte) value);
            case SMALLINT:
                return JSON.getNodeFactory().numberNode((Short) value);
            case INTEGER:
                return JSON.getNodeFactory().numberNode((Integer) value);
            case DATE:
                return JSON.getNodeFactory().textNode(LocalDate.ofEpochDay((Integer) value).toString());
            case TIME_WITHOUT_TIME_ZONE:
                return JSON.getNodeFactory().textNode(LocalTime.ofNanoOfDay((Integer) value * 1_000_000L).toString());
            case BIGINT:
                return JSON.getNodeFactory().numberNode((Long) value);
            case FLOAT:
                return JSON.getNodeFactory().numberNode((double) (Float) value);
            case DOUBLE:
                return JSON.getNodeFactory().numberNode((Double) value);
            case CHAR:
            case VARCHAR:
                return JSON.getNodeFactory().textNode(value.toString());
            case BINARY:
            case VARBINARY: {
                StringBuilder hex = new StringBuilder();
                for (byte b : (byte[]) value) {
                    hex.append(String.format("%02x", b & 0xff));
                }
                return JSON.getNodeFactory().textNode(hex.toString());
            }
            case DECIMAL:
                return JSON.getNodeFactory().textNode(((Decimal) value).toBigDecimal().toPlainString());
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE: {
                LocalDateTime t = ((Timestamp) value).toLocalDateTime();
                return JSON.getNodeFactory().textNode(String.format("%sT%02d:%02d:%02d.%09d", t.toLocalDate(),
                        t.getHour(), t.getMinute(), t.getSecond(), t.getNano()));
            }
            case ARRAY:
            case MULTISET: {
                InternalArray array = (InternalArray) value;
                DataType element = type instanceof ArrayType ? ((ArrayType) type).getElementType()
                        : ((MultisetType) type).getElementType();
                InternalArray.ElementGetter getter = InternalArray.createElementGetter(element);
                ArrayNode out = JSON.createArrayNode();
                for (int i = 0; i < array.size(); i++) {
                    out.add(toJson(getter.getElementOrNull(array, i), element));
                }
                return out;
            }
            case MAP: {
                InternalMap map = (InternalMap) value;
                MapType mapType = (MapType) type;
                InternalArray.ElementGetter keyGetter = InternalArray.createElementGetter(mapType.getKeyType());
                InternalArray.ElementGetter valueGetter = InternalArray.createElementGetter(mapType.getValueType());
                ArrayNode out = JSON.createArrayNode();
                for (int i = 0; i < map.size(); i++) {
                    ArrayNode pair = out.addArray();
                    pair.add(toJson(keyGetter.getElementOrNull(map.keyArray(), i), mapType.getKeyType()));
                    pair.add(toJson(valueGetter.getElementOrNull(map.valueArray(), i), mapType.getValueType()));
                }
                return out;
            }
            case ROW: {
                RowType rowType = (RowType) type;
                InternalRow nested = (InternalRow) value;
                ObjectNode out = JSON.createObjectNode();
                List<DataField> fields = rowType.getFields();
                for (int i = 0; i < fields.size(); i++) {
                    out.set(fields.get(i).name(), toJson(
                            InternalRow.createFieldGetter(fields.get(i).type(), i).getFieldOrNull(nested),
                            fields.get(i).type()));
                }
                return out;
            }
            default:
                throw new UsageError("type " + type + " is not supported by the Java oracle");
        }
    }

    // ---------------------------------------------------------------------------------------- arguments

    private static String text(JsonNode node, String key) {
        JsonNode value = node.get(key);
        if (value == null || !value.isTextual()) {
            throw new UsageError("missing string '" + key + "' in " + node);
        }
        return value.asText();
    }

    private static JsonNode required(JsonNode node, String key) {
        JsonNode value = node.get(key);
        if (value == null || !value.isArray()) {
            throw new UsageError("missing list '" + key + "'");
        }
        return value;
    }

    private static List<String> stringList(JsonNode node) {
        List<String> out = new ArrayList<>();
        if (node != null) {
            for (JsonNode item : node) {
                out.add(item.asText());
            }
        }
        return out;
    }

    private static Map<String, String> stringMap(JsonNode node) {
        Map<String, String> out = new LinkedHashMap<>();
        if (node != null) {
            Iterator<Map.Entry<String, JsonNode>> entries = node.fields();
            while (entries.hasNext()) {
                Map.Entry<String, JsonNode> entry = entries.next();
                out.put(entry.getKey(), entry.getValue().asText());
            }
        }
        return out;
    }

    // -------------------------------------------------------------------------------------- file indexes

    /**
     * What Java's index writer makes of some values: {type, index (bloom-filter | bitmap), values, options?}
     * -> {bytes: hex of FileIndexWriter.serializedBytes(), hashes: FastHash of each non-null value (bloom)}.
     */
    private static ObjectNode fileIndexBytes(JsonNode cmd) throws Exception {
        DataType type = parseType(text(cmd, "type"));
        String index = text(cmd, "index");
        org.apache.paimon.fileindex.FileIndexWriter writer = org.apache.paimon.fileindex.FileIndexer
                .create(index, type, new Options(stringMap(cmd.get("options")))).createWriter();
        ArrayNode hashes = JSON.createArrayNode();
        org.apache.paimon.fileindex.bloomfilter.FastHash hash = index.equals("bloom-filter")
                ? org.apache.paimon.fileindex.bloomfilter.FastHash.getHashFunction(type) : null;
        for (JsonNode value : required(cmd, "values")) {
            Object internal = toInternal(value, type);
            writer.writeRecord(internal);
            if (hash != null && internal != null) {
                hashes.add(hash.hash(internal));
            }
        }
        ObjectNode out = JSON.createObjectNode();
        out.put("bytes", bytesToHex(writer.serializedBytes()));
        out.set("hashes", hashes);
        return out;
    }

    /**
     * Java's index reader on given index bytes: {type, index, bytes (hex), probes: [{op: = | != | in | not_in |
     * is_null | is_not_null, values?}]} -> {remain: [true | false per probe]}.
     */
    private static ObjectNode fileIndexProbe(JsonNode cmd) throws Exception {
        DataType type = parseType(text(cmd, "type"));
        byte[] bytes = hexToBytes(text(cmd, "bytes"));
        ArrayNode remain = JSON.createArrayNode();
        for (JsonNode probe : required(cmd, "probes")) {
            org.apache.paimon.fileindex.FileIndexReader reader = org.apache.paimon.fileindex.FileIndexer
                    .create(text(cmd, "index"), type, new Options())
                    .createReader(new org.apache.paimon.fs.ByteArraySeekableStream(bytes), 0, bytes.length);
            org.apache.paimon.predicate.FieldRef ref = new org.apache.paimon.predicate.FieldRef(0, "c", type);
            List<Object> literals = new ArrayList<>();
            if (probe.has("values")) {
                for (JsonNode value : probe.get("values")) {
                    literals.add(toInternal(value, type));
                }
            }
            org.apache.paimon.fileindex.FileIndexResult result;
            switch (text(probe, "op")) {
                case "=": result = reader.visitEqual(ref, literals.get(0)); break;
                case "!=": result = reader.visitNotEqual(ref, literals.get(0)); break;
                case "in": result = reader.visitIn(ref, literals); break;
                case "not_in": result = reader.visitNotIn(ref, literals); break;
                case "is_null": result = reader.visitIsNull(ref); break;
                case "is_not_null": result = reader.visitIsNotNull(ref); break;
                default: throw new UsageError("unknown probe op in " + probe);
            }
            remain.add(result.remain());
        }
        ObjectNode out = JSON.createObjectNode();
        out.set("remain", remain);
        return out;
    }

    /** Java's index container of given blobs: {columns: {column: {index type: hex | null}}} -> {bytes: hex}. */
    private static ObjectNode fileIndexContainer(JsonNode cmd) throws Exception {
        Map<String, Map<String, byte[]>> columns = new LinkedHashMap<>();
        Iterator<Map.Entry<String, JsonNode>> entries = cmd.get("columns").fields();
        while (entries.hasNext()) {
            Map.Entry<String, JsonNode> column = entries.next();
            Map<String, byte[]> blobs = columns.computeIfAbsent(column.getKey(), k -> new LinkedHashMap<>());
            Iterator<Map.Entry<String, JsonNode>> types = column.getValue().fields();
            while (types.hasNext()) {
                Map.Entry<String, JsonNode> blob = types.next();
                blobs.put(blob.getKey(), blob.getValue().isNull() ? null : hexToBytes(blob.getValue().asText()));
            }
        }
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        try (org.apache.paimon.fileindex.FileIndexFormat.Writer writer =
                org.apache.paimon.fileindex.FileIndexFormat.createWriter(bytes)) {
            writer.writeColumnIndexes(columns);
        }
        ObjectNode out = JSON.createObjectNode();
        out.put("bytes", bytesToHex(bytes.toByteArray()));
        return out;
    }

    /**
     * Java's file-index verdict on every data file of the latest snapshot, as its scan (embedded index) and its
     * reader (an index file among the extra files) decide it: {filter: [{column, op, values?}] (ANDed)} ->
     * {files: {data file name: true (read) | false (skipped)}}.
     */
    private static ObjectNode fileIndexVerdicts(JsonNode cmd) throws Exception {
        FileStoreTable table = (FileStoreTable) table(cmd);
        RowType rowType = table.rowType();
        org.apache.paimon.predicate.PredicateBuilder builder =
                new org.apache.paimon.predicate.PredicateBuilder(rowType);
        List<org.apache.paimon.predicate.Predicate> leaves = new ArrayList<>();
        for (JsonNode leaf : required(cmd, "filter")) {
            int index = rowType.getFieldIndex(text(leaf, "column"));
            DataType type = rowType.getTypeAt(index);
            List<Object> literals = new ArrayList<>();
            if (leaf.has("values")) {
                for (JsonNode value : leaf.get("values")) {
                    literals.add(toInternal(value, type));
                }
            }
            switch (text(leaf, "op")) {
                case "=": leaves.add(builder.equal(index, literals.get(0))); break;
                case "!=": leaves.add(builder.notEqual(index, literals.get(0))); break;
                case "in": leaves.add(builder.in(index, literals)); break;
                case "is_null": leaves.add(builder.isNull(index)); break;
                case "is_not_null": leaves.add(builder.isNotNull(index)); break;
                default: throw new UsageError("unknown filter op in " + leaf);
            }
        }
        org.apache.paimon.predicate.Predicate predicate = org.apache.paimon.predicate.PredicateBuilder.and(leaves);
        ObjectNode files = JSON.createObjectNode();
        for (Split split : table.newReadBuilder().newScan().plan().splits()) {
            DataSplit data = (DataSplit) split;
            org.apache.paimon.io.DataFilePathFactory paths =
                    table.store().pathFactory().createDataFilePathFactory(data.partition(), data.bucket());
            for (DataFileMeta meta : data.dataFiles()) {
                org.apache.paimon.fileindex.FileIndexPredicate index = null;
                if (meta.embeddedIndex() != null) {
                    index = new org.apache.paimon.fileindex.FileIndexPredicate(meta.embeddedIndex(), rowType);
                } else {
                    for (String extra : meta.extraFiles()) {
                        if (extra.endsWith(org.apache.paimon.io.DataFilePathFactory.INDEX_PATH_SUFFIX)) {
                            index = new org.apache.paimon.fileindex.FileIndexPredicate(
                                    paths.toPath(extra), table.fileIO(), rowType);
                        }
                    }
                }
                boolean remain = true;
                if (index != null) {
                    try {
                        remain = index.testPredicate(predicate);
                    } finally {
                        index.close();
                    }
                }
                files.put(meta.fileName(), remain);
            }
        }
        ObjectNode out = JSON.createObjectNode();
        out.set("files", files);
        return out;
    }

    private static String bytesToHex(byte[] bytes) {
        StringBuilder hex = new StringBuilder(bytes.length * 2);
        for (byte b : bytes) {
            hex.append(String.format("%02x", b & 0xff));
        }
        return hex.toString();
    }

    // ------------------------------------------------------------------------------------ dynamic buckets

    /**
     * One commit into a dynamic-bucket (bucket = -1) primary-key table, as Java's own sinks do it: one
     * HashBucketAssigner (loading the table's HASH index) picks each row's bucket from the hash of its trimmed
     * primary key. {rows: [[...] | {...}], kinds?: [...]}.
     */
    private static ObjectNode writeDynamic(JsonNode cmd) throws Exception {
        FileStoreTable table = (FileStoreTable) table(cmd);
        RowType rowType = table.rowType();
        org.apache.paimon.table.sink.RowPartitionKeyExtractor extractor =
                new org.apache.paimon.table.sink.RowPartitionKeyExtractor(table.schema());
        org.apache.paimon.index.HashBucketAssigner assigner = new org.apache.paimon.index.HashBucketAssigner(
                table.snapshotManager(), "java-oracle", table.store().newIndexFileHandler(), 1, 1, 0,
                table.coreOptions().dynamicBucketTargetRowNum());
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        JsonNode rows = required(cmd, "rows");
        JsonNode kinds = cmd.get("kinds");
        try (BatchTableWrite write = newWrite(builder); BatchTableCommit commit = builder.newCommit()) {
            for (int i = 0; i < rows.size(); i++) {
                GenericRow row = toRow(rows.get(i), rowType);
                if (kinds != null) {
                    row.setRowKind(RowKind.fromShortString(kinds.get(i).asText()));
                }
                BinaryRow partition = extractor.partition(row);
                int bucket = assigner.assign(partition, extractor.trimmedPrimaryKey(row).hashCode());
                write.write(row, bucket);
            }
            commit.commit(write.prepareCommit());
        }
        ObjectNode out = JSON.createObjectNode();
        out.put("snapshot_id", latestSnapshotId(cmd));
        return out;
    }

    // ------------------------------------------------------------------------------------------- streaming

    /**
     * Java's streaming read (``newStreamScan``, dynamic options such as scan.mode = from-snapshot): every plan
     * until the scan has passed the latest snapshot, rows with their kinds in plan order, and per row the
     * index of the plan that returned it. For a table with a changelog producer these are its changelog files.
     */
    private static ObjectNode stream(JsonNode cmd) throws Exception {
        Table table = table(cmd);
        RowType rowType = table.rowType();
        Long latest = ((FileStoreTable) table).snapshotManager().latestSnapshotId();
        ReadBuilder builder = table.newReadBuilder();
        StreamTableScan scan = builder.newStreamScan();
        TableRead read = builder.newRead();
        ArrayNode rows = JSON.createArrayNode();
        ArrayNode kinds = JSON.createArrayNode();
        ArrayNode plans = JSON.createArrayNode();
        for (int i = 0; i < 64 && latest != null; i++) {
            TableScan.Plan plan = scan.plan();
            final int index = i;
            try (RecordReader<InternalRow> reader = read.createReader(plan)) {
                reader.forEachRemaining(row -> {
                    rows.add(rowToJson(row, rowType));
                    kinds.add(row.getRowKind().shortString());
                    plans.add(index);
                });
            }
            Long next = scan.checkpoint();
            if (next == null || next > latest) {
                break;
            }
        }
        ObjectNode out = JSON.createObjectNode();
        out.set("fields", fieldsJson(rowType));
        out.set("rows", rows);
        out.set("kinds", kinds);
        out.set("plans", plans);
        return out;
    }

    /**
     * {rows, kinds?}: one commit into a cross-partition upsert table (bucket = -1, primary key without every
     * partition key), routed as Java's GlobalIndexAssigner routes: the key index from IndexBootstrap, new keys
     * placed by the crosspartition BucketAssigner, known keys in another partition handed to the merge engine's
     * ExistingProcessor. Only the assigner's RocksDB state (absent from the bridge jar) is a map here.
     */
    private static ObjectNode writeCrossPartition(JsonNode cmd) throws Exception {
        FileStoreTable table = (FileStoreTable) table(cmd);
        RowType rowType = table.rowType();
        org.apache.paimon.table.sink.RowPartitionKeyExtractor extractor =
                new org.apache.paimon.table.sink.RowPartitionKeyExtractor(table.schema());
        org.apache.paimon.crosspartition.KeyPartPartitionKeyExtractor bootExtractor =
                new org.apache.paimon.crosspartition.KeyPartPartitionKeyExtractor(table.schema());
        org.apache.paimon.crosspartition.BucketAssigner assigner =
                new org.apache.paimon.crosspartition.BucketAssigner();
        Map<BinaryRow, Object[]> index = new HashMap<>();
        int bucketField = org.apache.paimon.crosspartition.IndexBootstrap.bootstrapType(table.schema())
                .getFieldCount() - 1;
        new org.apache.paimon.crosspartition.IndexBootstrap(table).bootstrap(1, 0, row -> {
            BinaryRow part = bootExtractor.partition(row).copy();
            int bucket = row.getInt(bucketField);
            assigner.bootstrapBucket(part, bucket);
            index.put(bootExtractor.trimmedPrimaryKey(row).copy(), new Object[] {part, bucket});
        });
        int target = (int) table.coreOptions().dynamicBucketTargetRowNum();
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        JsonNode rows = required(cmd, "rows");
        JsonNode kinds = cmd.get("kinds");
        try (BatchTableWrite write = newWrite(builder); BatchTableCommit commit = builder.newCommit()) {
            java.util.function.BiConsumer<InternalRow, Integer> collect = (row, bucket) -> {
                try {
                    write.write(row, bucket);
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            };
            org.apache.paimon.crosspartition.ExistingProcessor processor =
                    org.apache.paimon.crosspartition.ExistingProcessor.create(
                            table.coreOptions().mergeEngine(),
                            new org.apache.paimon.utils.ProjectToRowFunction(rowType, table.partitionKeys()),
                            assigner,
                            collect);
            for (int i = 0; i < rows.size(); i++) {
                GenericRow row = toRow(rows.get(i), rowType);
                if (kinds != null) {
                    row.setRowKind(RowKind.fromShortString(kinds.get(i).asText()));
                }
                BinaryRow part = extractor.partition(row).copy();
                BinaryRow key = extractor.trimmedPrimaryKey(row).copy();
                Object[] where = index.get(key);
                boolean placeNew = true;
                if (where != null) {
                    if (where[0].equals(part)) {
                        collect.accept(row, (Integer) where[1]);
                        placeNew = false;
                    } else {
                        placeNew = processor.processExists(row, (BinaryRow) where[0], (Integer) where[1]);
                    }
                }
                if (placeNew) {
                    int bucket = assigner.assignBucket(part, b -> true, target);
                    index.put(key, new Object[] {part, bucket});
                    collect.accept(row, bucket);
                }
            }
            commit.commit(write.prepareCommit());
        }
        ObjectNode out = JSON.createObjectNode();
        out.put("snapshot_id", latestSnapshotId(cmd));
        return out;
    }
}
