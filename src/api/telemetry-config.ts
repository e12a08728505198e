import { Type, type Static } from 'typebox';

// A session's telemetry configuration (create and PATCH bodies, the session object), apart from
// the telemetry routes so that schemas.ts can use it without a cycle.

export const TELEMETRY_CATEGORIES = [
  'control',
  'connection',
  'system',
  'captcha',
  'console',
  'network',
  'page',
  'interaction',
  'screenshot',
  'platform',
] as const;
export type TelemetryCategory = (typeof TELEMETRY_CATEGORIES)[number];

const CategoryConfigSchema = Type.Object({ enabled: Type.Optional(Type.Boolean()) }, { additionalProperties: false });

/** Kernel's `control.cdp`: which browser-control commands sent over `cdp_ws_url` give no `cdp_command` event. */
const CdpControlSchema = Type.Object(
  {
    excluded_methods: Type.Optional(
      Type.Array(Type.String({ pattern: '^[A-Z][A-Za-z]*\\.[a-z][A-Za-z]*$', maxLength: 100 }), {
        maxItems: 100,
        description: 'CDP methods left out of the cdp_command events (still relayed); [] reports every one again; omitted keeps the current list',
      }),
    ),
  },
  { additionalProperties: false },
);
const ControlConfigSchema = Type.Object(
  { enabled: Type.Optional(Type.Boolean()), cdp: Type.Optional(CdpControlSchema) },
  { additionalProperties: false },
);
const CategoriesSchema = Type.Object(
  {
    ...(Object.fromEntries(TELEMETRY_CATEGORIES.map((c) => [c, Type.Optional(CategoryConfigSchema)])) as Record<
      TelemetryCategory,
      ReturnType<typeof Type.Optional<typeof CategoryConfigSchema>>
    >),
    control: Type.Optional(ControlConfigSchema),
  },
  { additionalProperties: false },
);

/** Kernel's `telemetry.export`: where a session's captured events also go. */
const TelemetryExportRequestSchema = Type.Object(
  {
    otlp: Type.Optional(
      Type.Object(
        {
          enabled: Type.Optional(Type.Boolean({ description: 'false stops exporting (a destination implies true)' })),
          destination: Type.Optional(
            Type.Object(
              { id: Type.Optional(Type.String({ minLength: 1 })), name: Type.Optional(Type.String({ minLength: 1 })) },
              { additionalProperties: false, description: 'An OTLP destination (POST /telemetry/destinations), by id or name' },
            ),
          ),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

/** The `telemetry` of a create or PATCH body. */
export const TelemetryRequestSchema = Type.Object(
  {
    enabled: Type.Optional(
      Type.Boolean({ description: 'true: capture the default set (control, connection, system, captcha) plus `browser`; false: none' }),
    ),
    browser: Type.Optional(CategoriesSchema),
    export: Type.Optional(TelemetryExportRequestSchema),
  },
  { additionalProperties: false },
);
export type TelemetryRequest = Static<typeof TelemetryRequestSchema>;

/** A session's active configuration, as its API object shows it. */
export const TelemetryConfigSchema = Type.Object({
  export: Type.Optional(
    Type.Object({
      otlp: Type.Object({
        enabled: Type.Boolean(),
        destination: Type.Optional(Type.String({ description: 'The OTLP destination it exports to' })),
      }),
    }),
  ),
  browser: Type.Object({
    ...(Object.fromEntries(TELEMETRY_CATEGORIES.map((c) => [c, Type.Object({ enabled: Type.Boolean() })])) as unknown as Record<
      TelemetryCategory,
      ReturnType<typeof Type.Object<{ enabled: ReturnType<typeof Type.Boolean> }>>
    >),
    control: Type.Object({
      enabled: Type.Boolean(),
      cdp: Type.Optional(Type.Object({ excluded_methods: Type.Array(Type.String()) })),
    }),
  }),
});
export type TelemetryConfig = Static<typeof TelemetryConfigSchema>;
