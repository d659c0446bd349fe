package uk.co.sunmoor.assist.web;

import org.springframework.ai.tool.execution.ToolExecutionExceptionProcessor;
import org.springframework.stereotype.Component;
import org.springframework.web.client.HttpClientErrorException;

/**
 * Hands the downstream service's 4xx body (Spring Boot's default error JSON with the
 * "errors" array from bean validation) back to the model as the tool result, so it can retry.
 */
@Component
public class ToolErrorHandler implements ToolExecutionExceptionProcessor {

    @Override
    public String process(org.springframework.ai.tool.execution.ToolExecutionException ex) {
        if (ex.getCause() instanceof HttpClientErrorException http) {
            return http.getResponseBodyAsString();
        }
        throw ex;
    }
}
